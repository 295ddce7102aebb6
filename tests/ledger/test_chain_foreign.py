"""The runner signs only what it wrote, and the chain covers every column a read selects on, on
SQLite and PostgreSQL: a forged INSERT with a correct link stops the signer and is named
foreign; a changed attempt, task id or stage is reported and refused by the reads."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from helpers.chain import Owner, forge, receipt, verify

from landed.ledger.base import LedgerError, UntrustedRow
from landed.ledger.chain import HeadSigner
from landed.ledger.factory import open_ledger
from landed.ledger.trusted import receipts_report
from landed.signing import KeyPair


@pytest.fixture
def key() -> KeyPair:
    return KeyPair.generate()


def kinds(report: object) -> list[tuple[str, str, int | None]]:
    found = report.all_findings()  # type: ignore[attr-defined]
    return [(f.kind, f.chain, f.sequence) for f in found]


def heads(owner: Owner) -> int:
    table = "landed_chain_heads" if owner.path else f"{owner.schema}.landed_chain_heads"
    return int(owner.run(f"SELECT count(*) FROM {table} WHERE key_id <> 'migration-v2'")[0][0])


async def test_a_forged_insert_with_a_correct_link_stops_the_signer_and_is_named_foreign(
    owner: Owner, key: KeyPair, caplog: pytest.LogCaptureFixture
) -> None:
    signer = HeadSigner(key, every=1000, interval_s=3600, foreign_after=0)
    async with await open_ledger(owner.url, signer=signer) as ledger:
        await ledger.append_many([receipt("a"), receipt("b")])
        await ledger.sign_head()
        assert heads(owner) == 1
        forged = forge(owner, "forged")  # one plain INSERT, its link computed right
        await ledger.append(receipt("c"))  # the runner links on past it, unaware
        with caplog.at_level(logging.ERROR, logger="landed.ledger"):
            await ledger.sign_head()
        assert heads(owner) == 1, "the runner signed a head over a row it did not write"
        assert ("receipts", 3) in signer.foreign
        assert "FOREIGN" in caplog.text
    assert heads(owner) == 1  # nor at close
    # Before: the next head covered it and verify --max-unsigned 0 said intact.
    report = await verify(owner.url, key, max_unsigned=0, foreign_after=0)
    assert ("foreign", "receipts", forged) in kinds(report)
    assert report.as_dict()["foreign_rows"] >= 1
    # The links alone still hold: only the runner's vouching tells the row apart.
    assert not (await verify(owner.url, None)).tampered
    async with await open_ledger(owner.url, create=False) as ledger:
        trusted = await receipts_report(ledger, {key.key_id: key.public_key}, 0)
    assert not trusted.trusts(forged) and trusted.trusts(1)


async def test_rows_of_a_runner_are_not_foreign_while_it_still_signs_them(
    owner: Owner, key: KeyPair
) -> None:
    async with await open_ledger(owner.url, signer=HeadSigner(key, every=2)) as ledger:
        for i in range(5):
            await ledger.append(receipt(f"r{i}"))
            await ledger.claim(f"q{i}", "run-1", 1, "d")
    report = await verify(owner.url, key, max_unsigned=0, foreign_after=0)
    assert not report.tampered, report.all_findings()
    assert [s.rows for s in report.sides] == [5, 0]


@pytest.mark.parametrize(
    ("column", "value"), [("attempt", "2"), ("task_id", "'other'"), ("stage", "'confirmed'")]
)
async def test_a_changed_column_a_read_selects_on_is_reported_and_refused(
    owner: Owner, key: KeyPair, column: str, value: str
) -> None:
    async with await open_ledger(owner.url, signer=HeadSigner(key, every=2)) as ledger:
        for name in ("a", "b", "c", "d"):
            await ledger.append(receipt(name))
    owner.drop_triggers()
    owner.run(f"UPDATE {{t}} SET {column} = {value} WHERE sequence = 2")
    report = await verify(owner.url, key)
    assert ("link_broken", "receipts", 2) in kinds(report), kinds(report)
    task = "other" if column == "task_id" else "b"
    async with await open_ledger(owner.url, create=False) as ledger:
        with pytest.raises(UntrustedRow, match="sequence 2"):
            await ledger.latest(task)
        assert (await ledger.latest("a")) is not None  # before the break: still trusted
        with pytest.raises(LedgerError, match="past a break"):
            await ledger.latest("d")


async def test_an_edited_claim_or_event_is_reported_on_its_own_chain(
    owner: Owner, key: KeyPair
) -> None:
    from datetime import UTC, datetime

    from landed.ledger.base import LedgerEvent

    async with await open_ledger(owner.url, signer=HeadSigner(key, every=1)) as ledger:
        for i in range(3):
            await ledger.claim(f"t{i}", "run-1", 1, "d", owner="erin")
            at = datetime(2026, 12, 4, i, tzinfo=UTC)
            await ledger.append_event(LedgerEvent(key=f"k{i}", kind="trip", at=at, body={"i": i}))
        await ledger.append(receipt("a"))
    assert not (await verify(owner.url, key, foreign_after=0)).tampered
    claims = "landed_claims" if owner.path else f"{owner.schema}.landed_claims"
    events = "landed_events" if owner.path else f"{owner.schema}.landed_events"
    if owner.path:
        owner.run("DROP TRIGGER landed_claims_no_update")
        owner.run("DROP TRIGGER landed_events_no_update")
        owner.run("DROP TRIGGER landed_events_no_delete")
    else:
        owner.run(f"ALTER TABLE {claims} DISABLE TRIGGER landed_claims_append_only")
        owner.run(f"ALTER TABLE {events} DISABLE TRIGGER landed_events_append_only")
    owner.run(f"UPDATE {claims} SET run_id = 'run-9' WHERE task_id = 't1'")
    owner.run(f"DELETE FROM {events} WHERE event_key = 'k0'")
    report = await verify(owner.url, key)
    found = [(kind, chain) for kind, chain, _ in kinds(report)]
    assert ("link_broken", "claims") in found, found
    assert ("deleted", "events") in found, found
    assert report.tampered


async def test_a_forged_claim_with_a_correct_link_is_foreign_too(
    owner: Owner, key: KeyPair
) -> None:
    from landed.ledger.links import link_v2

    signer = HeadSigner(key, every=1000, interval_s=3600, foreign_after=0)
    async with await open_ledger(owner.url, signer=signer) as ledger:
        await ledger.claim("real", "run-1", 1, "d")
        await ledger.sign_head()
        claims = "landed_claims" if owner.path else f"{owner.schema}.landed_claims"
        pos, last = owner.run(f"SELECT chain_pos, chain_link FROM {claims}")[0]
        at = "2026-12-04T00:00:00+00:00"
        shown = at if owner.path else "2026-12-04T00:00:00.000000"
        fields = ("ghost", "run-x", 1, "d", shown, "mallory", None)
        owner.run(
            f"INSERT INTO {claims} (task_id, run_id, attempt, spec_sha256, claimed_at, owner,"
            " chain_pos, chain_link) VALUES ('ghost', 'run-x', 1, 'd', %s, 'mallory', %s, %s)",
            at,
            int(pos) + 1,
            link_v2("claims", int(pos) + 1, fields, str(last)),
        )
        await ledger.claim("next", "run-2", 1, "d")
        await ledger.sign_head()
        assert ("claims", 2) in signer.foreign
    report = await verify(owner.url, key, foreign_after=0)
    assert ("foreign", "claims") in [(kind, chain) for kind, chain, _ in kinds(report)]
    assert not (await verify(owner.url, None)).tampered  # its link is right


async def test_the_runners_lookup_refuses_an_untrusted_row_for_good(tmp_path: Path) -> None:
    from temporalio.exceptions import ApplicationError

    from landed.activities.runner import RunnerActivities
    from landed.task.messages import LookupInput, Routing

    path = tmp_path / "ledger.db"
    owner = Owner(f"sqlite:///{path}", path=path)
    async with await open_ledger(owner.url) as ledger:
        for name in ("a", "b"):
            await ledger.append(receipt(name))
    owner.drop_triggers()
    owner.run("UPDATE {t} SET attempt = 2 WHERE sequence = 1")  # undo, say, a reversal
    async with await open_ledger(owner.url, create=False) as ledger:
        acts = RunnerActivities(
            ledger, Routing(actor_task_queue="a", verifier_task_queue="v", runner="r")
        )
        with pytest.raises(ApplicationError) as err:
            await acts.lookup(LookupInput(task_id="a"))
    assert err.value.type == "UntrustedRow" and err.value.non_retryable


async def test_a_new_runner_key_on_an_older_ledger_keeps_signing(
    owner: Owner, key: KeyPair
) -> None:
    async with await open_ledger(owner.url, signer=HeadSigner(key, every=2)) as ledger:
        for name in ("a", "b", "c"):
            await ledger.append(receipt(name))
    rotated = KeyPair.generate()
    signer = HeadSigner(rotated, every=1000, interval_s=3600, foreign_after=0)
    async with await open_ledger(owner.url, signer=signer) as ledger:
        await ledger.append(receipt("d"))
        await ledger.sign_head()
        assert not signer.foreign
    trust = {k.key_id: k.public_key for k in (key, rotated)}
    async with await open_ledger(owner.url, create=False) as ledger:
        from landed.ledger.audit import audit

        report = await audit(ledger, trust, max_unsigned=0, foreign_after=0)
    assert not report.tampered, report.all_findings()
