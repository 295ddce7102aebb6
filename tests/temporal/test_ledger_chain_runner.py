"""The runner signs the ledger's chain head with its own key as it settles, and on shutdown:
`landed ledger verify --trust` then covers every receipt the workflows appended."""

from __future__ import annotations

from pathlib import Path

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
    assert report.last_signed_pos == 3 and report.signed_heads == 2
    assert {f.kind for f in other.findings} == {"head_untrusted"}
