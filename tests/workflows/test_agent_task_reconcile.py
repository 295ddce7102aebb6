"""AgentTask's unknown writes (DOD-10): an act that errored is read back before any retry, and
run again only when the read-back shows nothing changed; reads that observed nothing are read
again, a wrong state is settled at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.agent_task import agent_roles, read_back, verdicts_match_checker
from helpers.sor import Site, act_runs, make_rows_db, publish_task, row_count, rows_task


async def test_publish_saves_then_errors_reconciles_one_copy(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The DoD's seed case (DOD-10): the API saves the post, then answers 500. The workflow
    reads back before any retry, finds the post, and settles without publishing again."""
    site.save_then_fail = 1
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(publish_task("pub-1", "pricing"))
    assert site.count("pricing") == 1
    assert site.publishes == 1
    assert receipt.verdict == "verified"
    assert receipt.landed is not None and receipt.landed.act_error  # type: ignore[attr-defined]
    await verdicts_match_checker(roles, receipt)


async def test_failed_write_that_did_not_land_reruns_with_same_key(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(
            rows_task("rerun", db, expect=4, batch="r", write=4, fail="before", fail_attempts=1)
        )
    assert act_runs(db, "rerun") == [(1, "rerun"), (2, "rerun")]  # same idempotency key
    assert row_count(db, "r") == 4
    assert receipt.verdict == "verified"
    assert receipt.landed is not None and receipt.landed.attempt == 2


@pytest.mark.parametrize("pre_read", [True, False])
async def test_a_write_that_partly_landed_is_not_run_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, pre_read: bool
) -> None:
    """The act writes 2 of its 4 rows and errors: the read-back sees part of the outcome, so
    running the act again could write those 2 twice. It settles, not done, for a person to
    reconcile (DOD-10); only a read-back that shows nothing changed earns another attempt.
    Without a before-state only a read-back that finds nothing at all does."""
    task_id = f"partly-{pre_read}"
    task = rows_task(task_id, db, expect=4, batch="pl", write=2, fail="after", fail_attempts=1)
    task["pre_read"] = pre_read
    async with agent_roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        receipt = await roles.client.run(task)
    assert act_runs(db, task_id) == [(1, task_id)]
    assert row_count(db, "pl") == 2
    assert receipt.verdict != "verified"
    assert read_back(receipt)[0].result == "mismatch"
    assert receipt.landed is not None
    assert any("was not run again" in f for f in receipt.landed.findings)


async def test_probe_error_rereads_then_passes_and_persistent_error_is_not_done(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        site.count_unavailable = 2  # the pre-read errors once, the first after-read once
        ok = await roles.client.run(publish_task("flaky", "flaky"))
        assert ok.verdict == "verified"
        reads_before = site.count_reads
        site.count_unavailable = 100
        down = await roles.client.run(publish_task("down", "down"))
    assert ok.verdict == "verified"
    assert down.verdict != "verified"
    assert read_back(down)[0].result == "probe-error"
    # Bounded: verify_attempts (3) reads before and 3 after, then it settles.
    assert site.count_reads - reads_before == 6


async def test_a_changed_page_with_the_same_value_is_not_published_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The publish saves, then errors. The value the plan reads (the first post's title) is as
    the pre-read found it, but the page it comes from changed (a second post): something landed,
    so the act is not run again (DOD-10), and the task is not done."""
    site.posts.append({"slug": "ev", "title": "Old", "key": "an-earlier-publish"})
    site.save_then_fail = 1
    task = publish_task("evidence", "ev")
    task["act"]["input"]["title"] = "New"
    task["proof_plan"][0]["probe"]["url"] = "/posts?slug=ev"
    task["proof_plan"][0]["expect"] = {"type": "json_path", "path": "$[0].title", "value": "New"}
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
    assert site.publishes == 1 and site.count("ev") == 2
    assert receipt.verdict != "verified"
    assert receipt.landed is not None
    assert any("was not run again" in f for f in receipt.landed.findings), receipt.landed.findings


async def test_a_mismatch_is_settled_not_read_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Only "nothing was observed" is worth another read: a read-back that found the wrong state
    (a second copy of the post) is the answer, settled at once."""
    site.posts.append({"slug": "dup", "title": "", "key": "an-earlier-publish"})
    task = publish_task("dup", "dup")
    task["pre_read"] = False  # without a before-state the count is absolute: 2 copies, not 1
    async with agent_roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        reads = site.count_reads
        receipt = await roles.client.run(task)
    assert read_back(receipt)[0].result == "duplicated"  # a count above the expected one
    assert receipt.verdict != "verified"
    assert site.count_reads - reads == 1 and site.publishes == 1


async def test_reconcile_read_that_sees_nothing_never_reruns_the_act(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """DOD-10: the site saves the post and answers 500; the count endpoint is down for every
    read after. "Nothing observed" is not "not landed": one publish, settled not done."""
    site.save_then_fail = 1
    site.count_unavailable = 1000
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(publish_task("pub-unknown", "unknown"))
    assert site.publishes == 1
    assert site.count("unknown") == 1
    assert receipt.verdict == "failed"
    assert read_back(receipt)[0].result == "probe-error"
    assert receipt.landed is not None and receipt.landed.attempt == 1
    findings = receipt.landed.findings  # type: ignore[attr-defined]
    assert any(f.startswith("DOD-10") and "reconcile" in f for f in findings), findings
    await verdicts_match_checker(roles, receipt)


async def test_a_malformed_report_after_the_write_is_an_unknown_write(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The act writes its 3 rows, then returns a dict where an ActReport belongs. That refusal
    comes after the act ran, so it is an unknown write (DOD-10): read back first, and the rows
    that landed settle it, with the act run once, never a "failed" that invites a resubmit."""
    make_rows_db(db)
    task = rows_task("bad-report", db, expect=3, batch="br")
    task["act"] = {"name": "test.rows_bad_report", "input": {"batch": "br"}}
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
    assert row_count(db, "br") == 3
    assert act_runs(db, "bad-report") == [(1, "bad-report")]
    (proof,) = read_back(receipt)
    assert proof.result == "pass", proof
    assert receipt.verdict == "verified", receipt
    assert receipt.landed is not None
    assert "BadActReport" in (receipt.landed.model_dump().get("act_error") or ""), receipt.landed
