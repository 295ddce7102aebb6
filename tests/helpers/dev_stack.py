"""A `landed dev` stack of real role processes over a rows db and a site: the verifier reads
them as named sources, the actor reaches them with its own credentials and runs helpers.acts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from helpers.sor import Site
from landed.dev.stack import DevStack

TESTS = Path(__file__).parents[1]


def dev_stack(tmp_path: Path, db: Path, site: Site, **kw: Any) -> DevStack:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    base.update(
        {
            # The verifier's read credentials to the systems of record.
            "LANDED_SOURCES__ROWS_DB__URL": f"sqlite:///{db}",
            "LANDED_SOURCES__SITE__URL": site.url,
            # The actor's own credentials: the same database and site, as the agent reaches them.
            "LANDED_ACTOR_CREDENTIALS": json.dumps(
                {"rows-db": f"sqlite:///{db}", "site": site.url}
            ),
            "LANDED_ACTOR_ACTS": "helpers.acts",
        }
    )
    return DevStack(
        home=tmp_path / ".landed",
        headless=True,
        base_env=base,
        env={"actor": {"PYTHONPATH": str(TESTS)}},
        **kw,
    )
