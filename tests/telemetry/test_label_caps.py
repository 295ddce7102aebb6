"""The owner and loop labels stay bounded at 10,000 owners and 1,000 loops: past the cap, every
new value lands in one `other` series, landed_label_folds_total counts it, and /metrics stays
under a stated size; at a cap of 10,000 every owner keeps its name."""

from __future__ import annotations

import hashlib

import pytest
from helpers.exporter import samples, total
from helpers.scorecard import settled
from prometheus_client import CollectorRegistry, generate_latest

from landed.ledger.base import canonical_json
from landed.telemetry.aggregate import Board
from landed.telemetry.scorecard_metrics import ScorecardCollector

OWNERS, LOOPS = 10_000, 1_000
#: /metrics with the default cap (100), whatever the ledger names: 1 MiB (about 165 kB here).
DEFAULT_CAP_BYTES = 1024 * 1024
#: With a cap of 10,000 owners (and loops): every owner named, 8 MiB (about 7.1 MB here).
WIDE_CAP_BYTES = 8 * 1024 * 1024

BODY = canonical_json(settled("template-task")).decode()


def _board(cap: int) -> Board:
    board = Board(cap)
    for i in range(OWNERS):
        text = BODY.replace('"task_id":"template-task"', f'"task_id":"t-{i}"')
        text = text.replace('"owner":"agent-a"', f'"owner":"owner-{i:05d}"')
        text = text.replace('"landed":{', f'"landed":{{"loop":"loop-{i % LOOPS:04d}",', 1)
        board.add_row(i + 1, text, hashlib.sha256(text.encode()).hexdigest())
    assert board.rejected == 0
    return board


def _text(board: Board) -> str:
    registry = CollectorRegistry(auto_describe=False)
    collector = ScorecardCollector(board)
    collector.up = True
    registry.register(collector)
    return generate_latest(registry).decode()


def test_past_the_default_cap_owners_and_loops_fold_into_one_other_series() -> None:
    text = _text(_board(100))
    assert len(text.encode()) < DEFAULT_CAP_BYTES, len(text)
    found = samples(text)
    owners = {dict(k[1]).get("owner") for k in found if k[0] == "landed_done_claimed_total"}
    loops = {dict(k[1]).get("loop") for k in found if k[0] == "landed_done_claimed_total"}
    assert len(owners) == 101 and "other" in owners  # 100 named, the rest in one
    assert len(loops) == 101 and "other" in loops
    # Every receipt still counted: nothing is lost by folding, only its name.
    assert total(found, "landed_done_claimed_total") == OWNERS
    assert total(found, "landed_done_claimed_total", owner="other") == OWNERS - 100
    assert total(found, "landed_label_folds_total", label="owner") == OWNERS - 100
    # Loops 100..999 fold, each of their 10 receipts once.
    assert total(found, "landed_label_folds_total", label="loop") == (LOOPS - 100) * 10


@pytest.mark.slow
def test_a_cap_of_10000_names_every_owner_within_its_stated_size() -> None:
    text = _text(_board(OWNERS))
    assert len(text.encode()) < WIDE_CAP_BYTES, len(text)
    found = samples(text)
    owners = {dict(k[1]).get("owner") for k in found if k[0] == "landed_done_claimed_total"}
    assert len(owners) == OWNERS and "other" not in owners
    assert total(found, "landed_label_folds_total", label="owner") == 0
    assert total(found, "landed_label_folds_total", label="loop") == 0
