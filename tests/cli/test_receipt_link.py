"""`landed receipt TASK` links the task's page in the Web UI of the Temporal it is pointed at:
LANDED_WEB_UI, else TEMPORAL_ADDRESS's port + 1000 (as `landed submit --wait`), in the
namespace of TEMPORAL_NAMESPACE; --temporal-ui and --namespace win."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from landed.cli import app
from landed.ledger.factory import open_ledger
from landed.receipts.model import Receipt


@pytest.fixture
def ledger(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    done = Receipt(
        task_id="t-1",
        owner="o",
        claimed_status="done",
        verdict="verified",
        settled_at=datetime(2026, 11, 7, tzinfo=UTC),
    )

    async def seed() -> None:
        async with await open_ledger(url) as opened:
            await opened.append(done)

    asyncio.run(seed())
    return url


def _link(url: str, env: dict[str, str | None], *options: str) -> str:
    shown = CliRunner().invoke(app, ["receipt", "t-1", "--ledger", url, *options], env=env)
    assert shown.exit_code == 0, shown.output
    (line,) = [x for x in shown.output.splitlines() if x.startswith("Temporal Web UI: ")]
    return line.removeprefix("Temporal Web UI: ")


def test_the_link_follows_the_temporal_address_and_namespace(ledger: str) -> None:
    env: dict[str, str | None] = {
        "TEMPORAL_ADDRESS": "127.0.0.1:7301",
        "TEMPORAL_NAMESPACE": "shop",
        "LANDED_WEB_UI": None,
    }
    assert _link(ledger, env) == "http://127.0.0.1:8301/namespaces/shop/workflows/t-1"
    unset: dict[str, str | None] = {k: None for k in env}
    assert _link(ledger, unset) == "http://127.0.0.1:8233/namespaces/default/workflows/t-1"
    given = {**env, "LANDED_WEB_UI": "https://ui.example/"}
    assert _link(ledger, given) == "https://ui.example/namespaces/shop/workflows/t-1"
    options = ("--temporal-ui", "http://h:1", "--namespace", "n")
    assert _link(ledger, env, *options) == "http://h:1/namespaces/n/workflows/t-1"
