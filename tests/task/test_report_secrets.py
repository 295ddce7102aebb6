"""An agent's report and its act's error are kept in the append-only ledger for ever: a key or
token in them is redacted before the receipt is assembled, one test per secret shape."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, rows_task

from landed.ledger.base import canonical_json
from landed.task.assemble import assemble_receipt
from landed.task.messages import ActReport
from landed.task.spec import TaskSpec

PEM = (
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEIKjw0gkI8y8wq1sxhLZbGm0Fm+f4b9c2ZcOVEwLJX5Ux\n"
    "-----END PRIVATE KEY-----"
)
SHAPES = {
    "pem-pkcs8": PEM,
    "pem-rsa": PEM.replace("PRIVATE KEY", "RSA PRIVATE KEY"),
    "pem-openssh": PEM.replace("PRIVATE KEY", "OPENSSH PRIVATE KEY"),
    "pem-cut-before-its-end": PEM.split("-----END")[0],
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "A1b2" * 9,
    "github-fine-grained": "github_pat_" + "x1Y2" * 8,
    "slack-token": "xoxb-1234567890-abcdefghij",
    "stripe-secret": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "llm-api-key": "sk-proj-" + "Qw3rTy" * 6,
    "google-api-key": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlLXZhbHVl",
    "bearer-header": "Authorization: Bearer abcdef123456",
    "dsn-password": "postgresql://agent:hunter2hunter2@db/orders",
}
# The part of each shape that must not survive (for a header, the credential after its name).
SECRET = {k: v for k, v in SHAPES.items()} | {
    "bearer-header": "abcdef123456",
    "dsn-password": "hunter2hunter2",
    "pem-cut-before-its-end": "MC4CAQAwBQYDK2VwBCIEIKjw0gkI8y8wq1sxhLZbGm0Fm",
}
SPEC = TaskSpec.model_validate(
    {
        "task_id": "t-secret",
        "owner": "agent-a",
        "outcome": "the report was filed",
        "target": "reports",
        "act": {"name": "test.rows"},
        "proof_plan": [],
    }
)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_secret_in_the_report_or_the_act_error_is_never_stored(shape: str) -> None:
    text = f"Done. Used the key below:\n{SHAPES[shape]}\nAll rows written."
    receipt = assemble_receipt(
        SPEC,
        ActReport(claimed_status="done", report=text),
        [],
        attempt=1,
        extra={"act_error": f"RuntimeError: write failed with {SHAPES[shape]}"},
    )
    stored = canonical_json(receipt).decode()
    assert SECRET[shape] not in stored
    assert "[redacted]" in receipt.report and "All rows written." in receipt.report
    assert receipt.landed is not None
    assert "[redacted]" in str(receipt.landed.act_error)


def test_ordinary_words_are_left_alone() -> None:
    text = "Asked the desk about ask-me tokens; basic plan; sk is a prefix; eyJ alone."
    receipt = assemble_receipt(SPEC, ActReport(claimed_status="done", report=text), [], attempt=1)
    assert receipt.report == text


@pytest.mark.slow
async def test_a_task_whose_act_prints_a_private_key_settles_without_it(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    task = rows_task(
        f"t-secret-e2e-{uuid.uuid4().hex[:8]}", db, expect=1, batch="b", write=1, report=PEM
    )
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        receipt = await roles.client.run(task)
        ledger_file = Path(roles.ledger_url.removeprefix("sqlite:///"))
    assert receipt.verdict == "verified" and "PRIVATE KEY" not in receipt.report
    with sqlite3.connect(ledger_file) as conn:
        bodies = [row[0] for row in conn.execute("select body from landed_receipts")]
    conn.close()
    assert bodies and not any("MC4CAQAwBQYDK2VwBCIEIKjw0gkI8y8wq1sxhLZbGm0F" in b for b in bodies)
