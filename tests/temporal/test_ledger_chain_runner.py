"""The runner signs the ledger's chain head with its own key as it settles, and on shutdown:
`landed ledger verify --trust` then covers every receipt the workflows appended."""

from __future__ import annotations

from pathlib import Path

from helpers.chain import Owner, forge
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, rows_task

from landed.ledger.audit import audit
from landed.ledger.factory import open_ledger
from landed.signing import TrustStore


async def test_the_runner_signs_heads_over_every_receipt_it_settles(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    async with rows_roles(temporal_dev, tmp_path, db, head_every=2) as roles:
        for i in range(3):
            task = rows_task(f"chain-runner-{i}", db, expect=1, batch=f"cr{i}", write=1)
            assert (await roles.client.run(task)).verdict == "verified"
        url, head_public = roles.ledger_url, roles.head_public_key
        verifier_public = roles.public_key
    async with await open_ledger(url, create=False) as ledger:
        report = await audit(ledger, TrustStore.load([head_public]), max_unsigned=0)
        # The verifier's key signs readings, never heads: a reader trusting it alone sees none.
        other = await audit(ledger, TrustStore.load([verifier_public]))
    assert not report.tampered, report.findings
    assert report.rows == report.last_pos == 3
    # Claims are links of their own chain now and count as appends: heads come more often.
    assert report.last_signed_pos == 3 and report.signed_heads >= 2
    assert [side.rows for side in report.sides] == [3, 0]  # one claim per task, no events
    assert {f.kind for f in other.findings} == {"head_untrusted"}


async def test_a_forged_insert_stops_the_running_runner_signing_and_is_named_foreign(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    async with rows_roles(
        temporal_dev, tmp_path, db, head_every=1, head_foreign_after_s=0
    ) as roles:
        first = rows_task("forge-0", db, expect=1, batch="f0", write=1)
        assert (await roles.client.run(first)).verdict == "verified"
        path = Path(roles.ledger_url.removeprefix("sqlite:///"))
        owner = Owner(roles.ledger_url, path=path)
        signed = owner.run("SELECT count(*) FROM landed_chain_heads")[0][0]
        # The file's owner (the same user as every role under `landed dev`) inserts one row.
        forged = forge(owner, "forged")
        second = rows_task("forge-1", db, expect=1, batch="f1", write=1)
        assert (await roles.client.run(second)).verdict == "verified"
        assert owner.run("SELECT count(*) FROM landed_chain_heads")[0][0] == signed
        head_public = roles.head_public_key
    assert owner.run("SELECT count(*) FROM landed_chain_heads")[0][0] == signed  # nor at close
    async with await open_ledger(roles.ledger_url, create=False) as ledger:
        report = await audit(ledger, TrustStore.load([head_public]), 0, foreign_after=0)
    assert ("foreign", forged) in {(f.kind, f.sequence) for f in report.findings}
