"""The chain's one definition, the head signer's schedule and the walk over rows in memory."""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import replace

from helpers.wait import until

from landed.ledger.audit import ChainWalk
from landed.ledger.chain import (
    GENESIS,
    ChainHead,
    ChainRow,
    HeadSigner,
    keep_signing,
    link,
    stop_signing,
)
from landed.ledger.links import link_v2
from landed.signing import KeyPair


def test_the_link_binds_position_sequence_body_hash_and_previous_link() -> None:
    # Pinned: a reader in another language recomputes exactly this (README, chain docstring).
    first = link(1, 1, "ab" * 32, GENESIS)
    assert first == "572093c1591aa43e3d24a2f3fa3a6e313644e428966bc0142735e726abebec16"
    text = f"landed.chain.v1\n1\n1\n{'ab' * 32}\n{GENESIS}".encode()
    assert first == hashlib.sha256(text).hexdigest()
    others = {link(2, 1, "ab" * 32, GENESIS), link(1, 2, "ab" * 32, GENESIS)}
    others |= {link(1, 1, "cd" * 32, GENESIS), link(1, 1, "ab" * 32, first)}
    assert first not in others and len(others) == 4


def rows(n: int) -> list[ChainRow]:
    """Receipt rows as the walk reads them, linked with v2 links; sequences may have gaps."""
    out, prev = [], GENESIS
    for pos in range(1, n + 1):
        body = f'{{"task_id":"t{pos}"}}'.encode()
        sha = hashlib.sha256(body).hexdigest()
        fields = (pos * 2, f"t{pos}", 1, "settle", "verified", None, None, sha)
        prev = link_v2("receipts", pos, fields, prev)
        out.append((pos * 2, pos, prev, sha, sha, None, *fields))
    return out


def test_two_rows_moved_whole_are_two_findings_not_a_cascade() -> None:
    chain = rows(6)
    a, b = chain[1], chain[2]
    # The rows' contents (chain columns too) trade places; their sequences stay.
    chain[1] = (a[0], *b[1:])
    chain[2] = (b[0], *a[1:])
    walk = ChainWalk([], None)
    walk.feed(chain)
    report = walk.finish()
    assert [(f.kind, f.sequence) for f in report.findings] == [
        ("deleted", 4),
        ("inserted_or_reordered", 6),
    ]


def test_a_clean_chain_in_pages_is_clean() -> None:
    chain = rows(10)
    walk = ChainWalk([], None)
    for start in range(0, 10, 3):
        walk.feed(chain[start : start + 3])
    report = walk.finish()
    assert not report.tampered and report.last_pos == 10 and report.last_sequence == 20


def test_a_signed_head_verifies_only_over_what_was_signed() -> None:
    key = KeyPair.generate()
    signer = HeadSigner(key)
    head = signer.sign(ChainHead(3, 7, "ef" * 32))
    assert head.signature_ok(key.public_key)
    assert not replace(head, pos=4).signature_ok(key.public_key)
    assert not replace(head, link="00" * 32).signature_ok(key.public_key)
    assert not replace(head, signature="not base64!").signature_ok(key.public_key)
    assert not head.signature_ok(KeyPair.generate().public_key)


def test_the_signer_is_due_every_n_appends_or_after_its_interval() -> None:
    signer = HeadSigner(KeyPair.generate(), every=3, interval_s=60)
    assert not signer.due()
    signer.appended(2)
    assert not signer.due()
    signer.appended(1)
    assert signer.due()
    signer.committed()
    assert not signer.due() and signer.unsigned == 0
    signer.appended(1)
    signer._last = time.monotonic() - 61
    assert signer.due()


async def test_quiet_appends_are_signed_by_the_ticker_and_at_close() -> None:
    signer = HeadSigner(KeyPair.generate(), every=100, interval_s=0.05)
    signed: list[int] = []

    async def sign() -> None:
        signed.append(signer.unsigned)
        signer.committed()

    ticker = asyncio.get_running_loop().create_task(keep_signing(signer, sign))
    signer.appended(2)
    await until("the ticker signs two quiet appends", lambda: signed == [2], timeout=5)
    signer.appended(1)
    await stop_signing(signer, ticker, sign)
    assert ticker.cancelled() or ticker.done()
    assert signed[-1] == 1 and signer.unsigned == 0
