"""Consent from a file source (GOV-6) on a real Temporal dev server: the verifier reads a JSON
consent file configured as a named source (kind ``file``, ``path`` the file) before the act;
a do-not-contact entry, a malformed file and a missing file each block with the act never
called, and the message of a bad file names the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import run_roles
from helpers.sor import act_runs, make_rows_db, row_count, rows_task
from temporalio.worker import Replayer

from landed.temporal.plugin import landed_plugin
from landed.workflows.agent_task import AgentTask

pytestmark = pytest.mark.timeout(180)

CONSENT = {
    "do_not_contact": [{"recipient": "nope@example.test", "channel": "*"}],
    "consent": [
        {"recipient": "yes@example.test", "channel": "message"},
        {"recipient": "nope@example.test", "channel": "message"},
    ],
}


def _contact(task_id: str, db: Path, recipient: str, source: str) -> dict[str, Any]:
    task = rows_task(task_id, db, expect=1, batch=task_id, write=1)
    task["contacts"] = {
        "kind": "message",
        "recipient": recipient,
        "consent_source": source,
        "timeout_s": 2,
    }
    return task


async def test_a_consent_file_allows_refuses_and_blocks_when_unreadable(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    good = tmp_path / "consent.json"
    good.write_text(json.dumps(CONSENT))
    bad = tmp_path / "bad.json"
    # The same key twice: the strict reader refuses it rather than keep either list.
    bad.write_text(
        '{"consent": [], "consent": [{"recipient": "yes@example.test", "channel": "*"}]}'
    )
    sources = {
        "rows-db": {"url": f"sqlite:///{db}"},
        "consent-file": {"kind": "file", "path": str(good)},
        "consent-bad": {"kind": "file", "path": str(bad)},
        "consent-missing": {"kind": "file", "path": str(tmp_path / "absent.json")},
    }
    async with run_roles(
        temporal_dev, tmp_path, credentials={"rows-db": f"sqlite:///{db}"}, sources=sources
    ) as roles:
        allowed = await roles.client.run(_contact("f-yes", db, "yes@example.test", "consent-file"))
        dnc = await roles.client.run(_contact("f-dnc", db, "nope@example.test", "consent-file"))
        malformed = await roles.client.run(_contact("f-bad", db, "yes@example.test", "consent-bad"))
        missing = await roles.client.run(
            _contact("f-missing", db, "yes@example.test", "consent-missing")
        )
        for task_id in ("f-yes", "f-dnc", "f-bad"):
            history = await roles.temporal.get_workflow_handle(task_id).fetch_history()
            await Replayer(workflows=[AgentTask], plugins=[landed_plugin()]).replay_workflow(
                history
            )
        verifier = roles.identities["verifier"]
    assert allowed.verdict == "verified", allowed.report
    assert act_runs(db, "f-yes") == [(1, "f-yes")]
    record = allowed.landed.model_dump()["consent"] if allowed.landed else {}
    assert record == {"allowed": True, "checked_by": verifier, "condition": ""}
    assert dnc.verdict == "blocked" and act_runs(db, "f-dnc") == [] and row_count(db, "f-dnc") == 0
    assert "nope@example.test is on the do-not-contact list" in (dnc.report or "")
    assert str(good) in (dnc.report or "")
    assert malformed.verdict == "blocked" and act_runs(db, "f-bad") == []
    assert "could not be read" in (malformed.report or "")
    assert "given twice" in (malformed.report or "") and "fix: write it as" in (
        malformed.report or ""
    )
    assert missing.verdict == "blocked" and act_runs(db, "f-missing") == []
    assert "could not be opened" in (missing.report or "")
    assert "fix: create it" in (missing.report or "")
