"""Consent and do-not-contact before contact (GOV-6) on a real Temporal dev server: the check
runs on the verifier, under its identity, before the act; a refusal, and a check that cannot
be read, settle blocked with the act never called (DOD-9)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import run_roles
from helpers.sor import act_runs, make_rows_db, row_count, rows_task
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

import landed
from landed.temporal.plugin import landed_plugin

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return make_rows_db(tmp_path / "rows.db")


@pytest.fixture
def consent_db(tmp_path: Path) -> Path:
    """The consent source: one do-not-contact row and consent for two recipients."""
    path = tmp_path / "consent.db"
    with sqlite3.connect(path) as conn:
        conn.execute("create table do_not_contact (recipient text, channel text)")
        conn.execute("create table contact_consent (recipient text, channel text)")
        conn.execute("insert into do_not_contact values ('nope@example.test', '*')")
        conn.executemany(
            "insert into contact_consent values (?, ?)",
            [("yes@example.test", "message"), ("nope@example.test", "message")],
        )
    return path


def _roles(address: str, tmp_path: Path, db: Path, consent: Path) -> Any:
    return run_roles(
        address,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={
            "rows-db": {"url": f"sqlite:///{db}"},
            "consent-db": {"url": f"sqlite:///{consent}"},
        },
    )


def contact(task_id: str, db: Path, recipient: str, **contacts: Any) -> dict[str, Any]:
    task = rows_task(task_id, db, expect=1, batch=task_id, write=1)
    task["contacts"] = {
        "kind": "message",
        "recipient": recipient,
        "consent_source": "consent-db",
        **contacts,
    }
    return task


async def test_consent_allows_and_refuses_before_the_act(
    temporal_dev: str, tmp_path: Path, db: Path, consent_db: Path
) -> None:
    async with _roles(temporal_dev, tmp_path, db, consent_db) as roles:
        allowed = await roles.client.run(contact("c-yes", db, "yes@example.test"))
        dnc = await roles.client.run(
            contact("c-dnc", db, "nope@example.test", cleared_by="privacy desk")
        )
        none = await roles.client.run(contact("c-none", db, "who@example.test"))
        for task_id in ("c-yes", "c-dnc"):
            history: WorkflowHistory = await roles.temporal.get_workflow_handle(
                task_id
            ).fetch_history()
            from landed.workflows.agent_task import AgentTask

            await Replayer(workflows=[AgentTask], plugins=[landed_plugin()]).replay_workflow(
                history
            )
        verifier = roles.identities["verifier"]
    assert allowed.verdict == "verified", allowed.report
    assert act_runs(db, "c-yes") == [(1, "c-yes")]
    record = allowed.landed.model_dump()["consent"] if allowed.landed else {}
    assert record == {"allowed": True, "checked_by": verifier, "condition": ""}
    assert dnc.verdict == "blocked" and act_runs(db, "c-dnc") == [] and row_count(db, "c-dnc") == 0
    assert "nope@example.test is on the do-not-contact list" in (dnc.report or "")
    assert "Who can clear it: privacy desk" in (dnc.report or "")
    assert none.verdict == "blocked" and act_runs(db, "c-none") == []
    assert "no consent from who@example.test for message" in (none.report or "")


@pytest.mark.parametrize("fault", ["locked", "no-table", "no-source"])
async def test_a_consent_check_that_cannot_be_read_blocks(
    temporal_dev: str, tmp_path: Path, db: Path, consent_db: Path, fault: str
) -> None:
    """The consent source times out (another process holds its write lock), lacks its table, or
    is not configured: the check never passes, the task is blocked and nothing is sent."""
    task = contact(f"c-{fault}", db, "yes@example.test", timeout_s=1)
    if fault == "no-source":
        task["contacts"]["consent_source"] = "unknown-consent"
    holder = sqlite3.connect(consent_db, isolation_level=None)
    if fault == "locked":
        holder.execute("begin exclusive")
    if fault == "no-table":
        holder.execute("drop table contact_consent")
    try:
        async with _roles(temporal_dev, tmp_path, db, consent_db) as roles:
            client = roles.client
            if fault == "no-source":
                # Asked first, the verifier names the source it lacks; started anyway, the
                # workflow's own consent check blocks it.
                with pytest.raises(landed.TaskRefused, match="unknown-consent"):
                    await client.start(task)
                client = landed.Client(
                    roles.temporal, task_queue=roles.queues["runner"], check_roles=False
                )
            receipt = await client.run(task)
    finally:
        if fault == "locked":
            holder.execute("rollback")
        holder.close()
    assert receipt.verdict == "blocked", receipt
    assert "could not be read" in (receipt.report or ""), receipt.report
    assert fault != "locked" or "did not finish before the timeout" in (receipt.report or "")
    assert act_runs(db, f"c-{fault}") == []
