"""python -m dashboards [--check]: write (or check) the committed dashboard JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard

from dashboards.fleet import fleet
from dashboards.owner import owner
from dashboards.slo import slo

HERE = Path(__file__).resolve().parent
BOARDS: dict[str, Callable[[], dashboard.Dashboard]] = {
    "landed-fleet.json": fleet,
    "landed-owner.json": owner,
    "landed-slo.json": slo,
}


def render(build: Callable[[], dashboard.Dashboard]) -> str:
    """The dashboard as committed: sorted keys, two-space indent, one newline at the end."""
    encoded = json.loads(json.dumps(build(), cls=JSONEncoder))
    # Grafana tells panels apart by id (links, "view panel"); the builders leave it unset.
    for number, panel in enumerate(encoded["panels"], start=1):
        panel["id"] = number
    return json.dumps(encoded, indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, build in BOARDS.items():
        text, path = render(build), HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
            print(f"wrote {path}")
    for name in stale:
        print(
            f"dashboards/{name} differs from the code; run `python -m dashboards`", file=sys.stderr
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
