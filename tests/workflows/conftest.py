"""The AgentTask tests' system of record: a rows db of their own (helpers.sor)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.sor import make_rows_db


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return make_rows_db(tmp_path / "rows.db")
