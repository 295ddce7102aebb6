"""The hash chain on SQLite and PostgreSQL: a clean ledger verifies; a table owner's deleted,
inserted, edited, swapped or relinked row is reported by its sequence."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers.chain import Owner, body_of, receipt, seed, verify

from landed.ledger.chain import HeadSigner
from landed.ledger.factory import open_ledger
from landed.signing import KeyPair


# PostgreSQL setups (a schema, a role, a pool) take longer than the suite's fast budget.
@pytest.fixture
def key() -> KeyPair:
    return KeyPair.generate()


def kinds(report: object) -> list[tuple[str, int | None]]:
    return [(f.kind, f.sequence) for f in report.findings]  # type: ignore[attr-defined]


async def test_a_clean_ledger_verifies_with_its_signed_heads(owner: Owner, key: KeyPair) -> None:
    await seed(owner.url, key)
    report = await verify(owner.url, key)
    assert not report.tampered, report.findings
    assert (report.rows, report.last_pos, report.signed_heads) == (6, 6, 2)
    assert (report.last_signed_pos, report.unsigned_tail) == (6, 0)


async def test_a_deleted_row_is_reported_between_the_sequences_around_it(
    owner: Owner, key: KeyPair
) -> None:
    await seed(owner.url, key)
    owner.drop_triggers()
    owner.run("DELETE FROM {t} WHERE sequence = 2")
    report = await verify(owner.url, key)
    assert kinds(report) == [("deleted", 3)]
    assert "between sequence 1 and sequence 3" in report.findings[0].message


async def test_deleted_rows_at_the_end_are_reported_by_the_signed_head(
    owner: Owner, key: KeyPair
) -> None:
    await seed(owner.url, key)
    owner.drop_triggers()
    owner.run("DELETE FROM {t} WHERE sequence >= 5")
    report = await verify(owner.url, key)
    assert kinds(report) == [("deleted", 6)]
    assert "signed head at position 6" in report.findings[0].message


async def test_an_inserted_row_is_reported_by_its_sequence(owner: Owner, key: KeyPair) -> None:
    await seed(owner.url, key)
    # A forger who knows the chain: the row claims position 3 and links onto position 2.
    _, link2, _, body = owner.row(2)
    text, sha = body_of(body.replace("chain-1", "forged"))
    overriding = " OVERRIDING SYSTEM VALUE" if owner.dsn else ""
    insert = (
        "INSERT INTO {t} (sequence, task_id, attempt, body_sha256, body, chain_pos, chain_link)"
        + overriding
        + " VALUES (%s, %s, 1, %s, %s, %s, %s)"
    )
    owner.run(insert, 7, "forged", sha, text, 3, "0" * 64)
    owner.drop_triggers()  # the link covers the row's columns: it is computed once it is stored
    owner.run("UPDATE {t} SET chain_link = %s WHERE sequence = 7", owner.link(3, 7, link2))
    # Someone who knows nothing of the chain: a plain row without a link.
    owner.run(insert, 8, "plain", sha, text, None, None)
    report = await verify(owner.url, key)
    assert kinds(report) == [("inserted_or_reordered", 7), ("unchained", 8)]


async def test_an_edited_body_is_reported_by_its_sequence(owner: Owner, key: KeyPair) -> None:
    await seed(owner.url, key)
    owner.drop_triggers()
    body = owner.row(4)[3]
    owner.run("UPDATE {t} SET body = %s WHERE sequence = 4", body.replace("verified", "failed"))
    report = await verify(owner.url, key)
    assert kinds(report) == [("body_edited", 4)]


async def test_two_swapped_rows_are_each_reported(owner: Owner, key: KeyPair) -> None:
    await seed(owner.url, key)
    owner.drop_triggers()
    (_, _, sha2, body2), (_, _, sha5, body5) = owner.row(2), owner.row(5)
    owner.run("UPDATE {t} SET body = %s, body_sha256 = %s WHERE sequence = 2", body5, sha5)
    owner.run("UPDATE {t} SET body = %s, body_sha256 = %s WHERE sequence = 5", body2, sha2)
    report = await verify(owner.url, key)
    assert kinds(report) == [("link_broken", 2), ("link_broken", 5)]


async def test_a_recomputed_chain_is_caught_by_the_head_it_cannot_sign(
    owner: Owner, key: KeyPair
) -> None:
    await seed(owner.url, key)
    owner.drop_triggers()
    text, sha = body_of(owner.row(2)[3].replace("verified", "failed"))
    owner.run("UPDATE {t} SET body = %s, body_sha256 = %s WHERE sequence = 2", text, sha)
    owner.relink_from(2)
    assert not (await verify(owner.url, None)).tampered  # the links alone now hold
    report = await verify(owner.url, key)
    assert kinds(report) == [("head_mismatch", 3), ("head_mismatch", 6)]
    assert "rows at or below sequence 3, above sequence 0" in report.findings[0].message


async def test_a_head_signed_by_another_key_is_not_trusted(owner: Owner, key: KeyPair) -> None:
    await seed(owner.url, key)
    report = await verify(owner.url, KeyPair.generate())
    assert kinds(report) == [("head_untrusted", 3), ("head_untrusted", 6)]
    assert report.last_signed_pos == 0 and report.unsigned_tail == 6


async def test_unsigned_rows_are_signed_on_close_and_counted_until_then(
    owner: Owner, key: KeyPair
) -> None:
    signer = HeadSigner(key, every=1000, interval_s=3600)
    async with await open_ledger(owner.url, signer=signer) as ledger:
        await ledger.append_many([receipt(f"t{i}") for i in range(4)])
        report = await verify(owner.url, key, max_unsigned=3)
        assert (report.signed_heads, report.unsigned_tail) == (0, 4)
        assert kinds(report) == [("unsigned_tail", 4)]
    report = await verify(owner.url, key, max_unsigned=0)
    assert not report.tampered and report.last_signed_pos == 4


@pytest.mark.slow
async def test_many_concurrent_writers_leave_one_unbroken_chain(owner: Owner, key: KeyPair) -> None:
    # Several ledgers (connections, pools) on one store append at once; each links on under the
    # store's lock (SQLite's write lock, PostgreSQL's advisory lock), so the chain stays whole.
    ledgers = [await open_ledger(owner.url, signer=HeadSigner(key, every=7)) for _ in range(6)]
    try:

        async def write(n: int) -> None:
            for i in range(10):
                await ledgers[n].append_many([receipt(f"w{n}-{i}-{j}") for j in range(3)])
                await ledgers[n].append(receipt(f"w{n}-{i}"))

        await asyncio.gather(*(write(n) for n in range(len(ledgers))))
    finally:
        await asyncio.gather(*(lg.close() for lg in ledgers))
    report = await verify(owner.url, key, max_unsigned=0)
    assert not report.tampered, report.findings
    assert report.rows == report.last_pos == 6 * 10 * 4


async def test_a_sqlite_chain_column_of_another_type_is_named_not_a_crash(
    tmp_path: Path, key: KeyPair
) -> None:
    path = tmp_path / "typed.db"
    owner = Owner(f"sqlite:///{path}", path=path)
    await seed(owner.url, key)
    owner.drop_triggers()
    owner.run("UPDATE {t} SET chain_pos = 'three' WHERE sequence = 3")
    report = await verify(owner.url, key)
    assert kinds(report) == [("unchained", 3), ("deleted", 4), ("deleted", 3)]
