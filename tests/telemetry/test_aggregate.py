"""The running sums, fed rows by hand: what each kind of row adds, and what it never adds."""

from __future__ import annotations

import pytest
from helpers.scorecard import settled

from landed.ledger.base import LedgerRow
from landed.receipts.model import Receipt
from landed.telemetry.aggregate import Board
from landed.telemetry.labels import LabelCap


def _feed(board: Board, *receipts: Receipt) -> None:
    for sequence, receipt in enumerate(receipts, start=board.rows_read + 1):
        row = LedgerRow.of(receipt)
        board.add_row(sequence, row.body.decode(), row.sha256)


def test_the_cap_keeps_the_first_names_and_never_counts_empty_or_other() -> None:
    cap = LabelCap(2)
    assert [cap.fold(v) for v in ("a", "", "other", "b", "c", "a", None)] == [
        "a",
        "",
        "other",
        "b",
        "other",
        "a",
        "",
    ]
    with pytest.raises(ValueError, match="MAX_LABEL_VALUES"):
        LabelCap(0)


def test_a_reversal_counts_once_and_releases_nothing_else() -> None:
    board = Board(10)
    _feed(board, settled("agg-1"), settled("agg-1", verdict="reversed", attempt=2))
    assert board.counts["landed_reversals_total"] == {("agent-a", ""): 1}
    assert sum(board.counts["landed_tasks_settled_total"].values()) == 1


def test_a_hold_stays_open_until_the_task_settles_again() -> None:
    board = Board(10)
    _feed(board, settled("agg-h", verdict="held"), settled("agg-k", verdict="held"))
    assert list(board.holds) == ["agg-h", "agg-k"]
    _feed(board, settled("agg-h", attempt=2))
    assert list(board.holds) == ["agg-k"]


def test_a_row_whose_hash_does_not_match_is_only_rejected() -> None:
    board = Board(10)
    row = LedgerRow.of(settled("agg-t"))
    board.add_row(1, row.body.decode().replace("agent-a", "agent-b"), row.sha256)
    assert board.rejected == 1 and board.counts == {} and not board.recent
