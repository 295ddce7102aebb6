"""What `landed worker runner --check` reports of a SQLite ledger: nothing created by looking."""

from __future__ import annotations

from pathlib import Path

from landed.ledger.factory import open_ledger
from landed.ledger.schema_check import schema_report
from landed.ledger.sqlite.schema import SCHEMA_VERSION


async def test_a_missing_then_a_current_sqlite_ledger(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    found = await schema_report(url)
    assert (found["found"], found["status"]) == (0, "missing")
    assert "the runner brings" in found["run"]
    assert not (tmp_path / "ledger.db").exists()  # looking created nothing
    async with await open_ledger(url):
        pass
    found = await schema_report(url)
    assert (found["found"], found["needs"], found["status"]) == (
        SCHEMA_VERSION,
        SCHEMA_VERSION,
        "current",
    )
