"""The append path both backends share (landed.ledger.append): which rows of a flush are new,
their links, what the head signer is told and when, and the answer for each row."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from landed.ledger.append import Batch
from landed.ledger.base import LedgerRow
from landed.ledger.chain import ChainHead, HeadSigner, SignedHead
from landed.ledger.links import FIELDS, link_v2
from landed.signing import KeyPair

AT = datetime(2026, 11, 7, 1, 0, 0, tzinfo=UTC)


def _row(task_id: str, attempt: int = 1) -> LedgerRow:
    body = f'{{"task_id":"{task_id}"}}'.encode()
    sha = hashlib.sha256(body).hexdigest()
    return LedgerRow(task_id, attempt, "verified", "agent-a", AT, body, sha)


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


class _Spy(HeadSigner):
    """A head signer that records what the append path told it."""

    told: list[str]

    def refused(self) -> None:
        self.told.append("refused")
        super().refused()

    def committed(self) -> None:
        self.told.append("committed")
        super().committed()


def _signer(every: int = 100) -> _Spy:
    spy = _Spy(KeyPair.generate(), every=every)
    spy.told = []
    return spy


def test_only_new_rows_are_linked_and_a_stored_one_is_answered_with_its_hash() -> None:
    a, b, c = _row("a"), _row("b"), _row("c")
    batch = Batch([a, b, c], {b.key: "stored-hash"}, None)
    assert batch.new == [a, c]
    head = ChainHead(5, 40, "f" * 64)
    end = batch.link(head, [41, 42], _iso)
    assert [(x.row, x.sequence, x.pos) for x in batch.linked] == [(a, 41, 6), (c, 42, 7)]
    # Each link binds the row's columns in the order the chain walk reads them back (FIELDS),
    # and the link before it: the walk of `landed ledger verify` recomputes exactly this.
    prev = head.link
    for x in batch.linked:
        r = x.row
        columns = {
            "sequence": x.sequence,
            "task_id": r.task_id,
            "attempt": r.attempt,
            "stage": r.stage,
            "verdict": r.verdict,
            "owner": r.owner,
            "settled_at": _iso(r.settled_at),
            "body_sha256": r.sha256,
        }
        stored = tuple(columns[name] for name in FIELDS["receipts"])
        assert x.link == link_v2("receipts", x.pos, stored, prev)
        assert x.at == columns["settled_at"]  # what SQLite stores in the column, too
        prev = x.link
    assert end == ChainHead(7, 42, prev)
    assert batch.committed() == [True, "stored-hash", True]


def test_a_sequence_missing_for_a_new_row_fails_instead_of_linking_part_of_the_batch() -> None:
    batch = Batch([_row("a"), _row("b")], {}, None)
    with pytest.raises(ValueError):
        batch.link(ChainHead(), [1], _iso)


def test_the_signer_owns_rows_only_once_the_insert_took_them_and_is_due_then() -> None:
    signer = _signer(every=2)
    batch = Batch([_row("a"), _row("b")], {}, signer)
    batch.link(ChainHead(), [1, 2], _iso)
    assert signer.unsigned == 0 and not batch.sign_due
    batch.inserted()
    assert signer.own["receipts"] == {1: batch.linked[0].link, 2: batch.linked[1].link}
    assert signer.unsigned == 2 and batch.sign_due


def test_a_signed_head_counts_only_after_the_commit_and_a_refused_one_at_once() -> None:
    signer = _signer()
    batch = Batch([_row("a")], {}, signer)
    batch.signing(SignedHead(1, 1, "l", "k", "t", "s"))
    assert signer.told == []  # not before the transaction that stored it commits
    assert batch.committed() == [True]
    assert signer.told == ["committed"]
    refused = Batch([_row("b")], {}, signer)
    refused.signing(None)
    assert signer.told == ["committed", "refused"]
    refused.committed()
    assert signer.told == ["committed", "refused"]
