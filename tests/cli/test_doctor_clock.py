"""``landed doctor``'s clock check: the decision on made-up offsets (more than 5 s apart, beyond
what the round trip leaves unknown, is a problem naming NTP), and the ledger's clock read from a
real PostgreSQL (a SQLite ledger is on this machine's clock: not compared)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from landed.cli.doctor_clock import SKEW_LIMIT_S, Offset, clock_check, ledger_offset, offset_between


def test_clocks_within_the_limit_pass_and_say_how_far_apart() -> None:
    check = clock_check([Offset("Temporal", 0.4, 0.01), Offset("the ledger", -1.2, 0.0)], [])
    assert check.ok and check.fix is None
    assert "Temporal 0.4s ahead of this machine" in check.detail
    assert "the ledger 1.2s behind this machine" in check.detail


@pytest.mark.parametrize("offset", [SKEW_LIMIT_S + 0.5, -(SKEW_LIMIT_S + 3), 3600.0])
def test_a_clock_more_than_the_limit_apart_is_a_problem_naming_ntp(offset: float) -> None:
    check = clock_check([Offset("Temporal", 0.1, 0.0), Offset("the ledger", offset, 0.2)], [])
    assert not check.ok and "NTP" in str(check.fix) and "the ledger" in str(check.fix)
    assert f"the ledger more than {SKEW_LIMIT_S:g}s off" in check.detail
    assert "Temporal" not in str(check.fix)


def test_what_the_round_trip_leaves_unknown_is_not_counted_as_skew() -> None:
    # 7 s apart as seen, but the read took 6 s: the clocks may be 4 s apart only.
    assert clock_check([Offset("Temporal", 7.0, 3.0)], []).ok
    assert not clock_check([Offset("Temporal", 9.0, 3.0)], []).ok


def test_no_clock_compared_is_a_problem_and_says_why() -> None:
    check = clock_check([], ["Temporal's clock not read (no preflight started)"])
    assert not check.ok and "Temporal's clock not read" in check.detail


def test_an_offset_is_read_from_the_middle_of_the_round_trip() -> None:
    offset = offset_between(106.0, 100.0, 102.0, "Temporal")
    assert offset == Offset("Temporal", 5.0, 1.0) and offset.skew_s == 4.0


def test_a_sqlite_ledger_is_not_compared(tmp_path: Path) -> None:
    assert asyncio.run(ledger_offset(f"sqlite:///{tmp_path / 'ledger.db'}", 5.0)) is None


def test_an_unreachable_ledger_says_it_was_not_compared() -> None:
    found = asyncio.run(ledger_offset("postgresql://nobody@127.0.0.1:1/none", 3.0))
    assert isinstance(found, str) and found.startswith("ledger not compared")


@pytest.mark.slow
def test_a_postgresql_ledgers_clock_is_read(postgres_dsn: str) -> None:
    found = asyncio.run(ledger_offset(postgres_dsn, 10.0))
    assert isinstance(found, Offset), found
    # The same machine's clock: within the round trip, give or take a loaded machine.
    assert found.skew_s < 1.0, found
    assert clock_check([found], []).ok
