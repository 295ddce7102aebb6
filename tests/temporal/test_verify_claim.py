"""VerifyClaim on the real dev server: claims from agents that acted outside Temporal read back
by the operator's contract for their outcome class, settled through the runner's settle step,
never verified twice; a plan the claimant brought is never proof; histories replayed."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

from helpers.claim_contracts import CONTRACTS
from helpers.roles import Roles, run_roles
from helpers.sor import Site
from helpers.wait import until
from temporalio.client import WorkflowHistory
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from landed.cli.reconcile_run import reconcile
from landed.cli.reconcile_tail import Tail
from landed.loops.spec import tripwire_id
from landed.loops.tripwire import TripwireState
from landed.receipts.model import Receipt
from landed.task.claims_in import VerifyClaimInput, parse_claim
from landed.task.names import STOP_SIGNAL, VERIFY_CLAIM_WORKFLOW
from landed.temporal.claims import start_claim, wait_result
from landed.temporal.loops import UnknownLoop, loop_state
from landed.temporal.plugin import landed_plugin, strict_workflow_runner
from landed.workflows.verify_claim import VerifyClaim


def contracts_file(tmp_path: Path) -> Path:
    path = tmp_path / "claim-contracts.json"
    path.write_text(json.dumps(CONTRACTS))
    return path


def _roles(temporal_dev: str, tmp_path: Path, site: Site) -> Any:
    return run_roles(
        temporal_dev,
        tmp_path,
        credentials={},
        sources={"site": {"url": site.url}},
        runner={"claim_contracts": contracts_file(tmp_path)},
    )


def _plan(slug: str) -> list[dict[str, Any]]:
    return [
        {
            "action": f"publish post {slug}",
            "probe": {"kind": "http", "source": "site", "url": f"/posts/count?slug={slug}"},
            "expect": {"type": "count", "value": 1},
        }
    ]


def contract(task_id: str, slug: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "contract",
        "task_id": task_id,
        "owner": "outside-agent",
        "outcome": "posts.published",
        "params": {"slug": slug},
        **extra,
    }


def log(task_id: str, slug: str | None = None, **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"task_id": task_id, "claimed_status": "done", **extra}
    if slug is not None:
        line["outcome"] = "posts.published"
        line["params"] = {"slug": slug}
    return line


def own_plan(task_id: str, slug: str, **extra: Any) -> dict[str, Any]:
    """A claim that brings its own probe plan (how claims were read back before contracts)."""
    return {
        "kind": "contract",
        "task_id": task_id,
        "owner": "outside-agent",
        "outcome": f"one post {slug} is on the site",
        "proof_plan": _plan(slug),
        **extra,
    }


def _input(record: dict[str, Any], line: int = 1) -> VerifyClaimInput:
    parsed = parse_claim(line, json.dumps(record).encode())
    assert isinstance(parsed, VerifyClaimInput), parsed
    return parsed


async def _settle(roles: Roles, record: dict[str, Any]) -> tuple[Receipt, bool]:
    started = await start_claim(roles.temporal, _input(record), task_queue=roles.queues["runner"])
    return await wait_result(started.handle), started.existing


def _ext(receipt: Receipt) -> dict[str, Any]:
    assert receipt.landed is not None
    return receipt.landed.model_dump()


async def _rows(roles: Roles, task_id: str) -> list[Receipt]:
    ledger = await roles.ledger()
    try:
        return list(await ledger.get(task_id))
    finally:
        await ledger.close()


async def test_claims_are_read_back_and_a_lie_is_not_verified(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    site.posts.append({"slug": "real"})  # the agent acted, outside Temporal
    async with _roles(temporal_dev, tmp_path, site) as roles:
        good, _ = await _settle(roles, contract("c-good", "real"))
        lie, _ = await _settle(roles, log("c-lie", "never-published"))
        histories = [
            await roles.temporal.get_workflow_handle(f"{t}#claim-1").fetch_history()
            for t in ("c-good", "c-lie")
        ]
        stored = await _rows(roles, "c-lie")
    assert good.verdict == "verified", _ext(good)["findings"]
    assert _ext(good)["claim_kind"] == "contract" and _ext(good)["pre_read"] is False
    # Judged by the operator's contract: its words, the class and the values the claim gave.
    assert good.outcome == "one post real is on the site"
    assert _ext(good)["outcome_class"] == "posts.published"
    assert _ext(good)["params"] == {"slug": "real"}
    assert (
        _ext(good)["claim_contracts_sha256"]
        == hashlib.sha256(contracts_file(tmp_path).read_bytes()).hexdigest()
    )
    # The verifier's own signed reading, not the agent's word.
    (read,) = [p for p in good.proof if p.kind == "http_contains"]
    assert read.result == "pass" and read.checked_by == roles.identities["verifier"]
    # The lie: says done, the read-back shows nothing landed.
    assert lie.claimed_status == "done" and lie.verdict != "verified"
    assert _ext(lie)["meets_bar"] is False
    assert [p.result for p in lie.proof if p.kind == "http_contains"] != ["pass"]
    # Settled through the runner's settle step: the ledger holds exactly that receipt.
    assert [r.verdict for r in stored] == [lie.verdict]
    await _replay(histories)


async def test_a_claim_that_cannot_be_read_back_settles_at_its_evidence_level(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    site.posts.append({"slug": "there"})
    async with _roles(temporal_dev, tmp_path, site) as roles:
        bare, _ = await _settle(roles, log("c-bare"))
        # A kind landed does not know: its plan is not taken, even though it would pass.
        odd, _ = await _settle(
            roles, {**contract("c-odd", "there"), "kind": "telepathy", "claimed_status": "done"}
        )
        cited, _ = await _settle(
            roles,
            log("c-cited", proof=[{"kind": "record", "ref": "orders-db:42", "result": "pass"}]),
        )
        history = await roles.temporal.get_workflow_handle("c-odd#claim-1").fetch_history()
    assert site.count_reads == 0  # nothing was read back for any of them
    for receipt in (bare, odd, cited):
        ext = _ext(receipt)
        assert receipt.verdict not in ("verified", "reconciled"), ext
        assert ext["meets_bar"] is False
        assert any("could not be read back" in f for f in ext["findings"]), ext["findings"]
    assert "no proof_plan" in " ".join(_ext(bare)["findings"])
    assert (
        "'telepathy'" in " ".join(_ext(odd)["findings"]) and _ext(odd)["claim_kind"] == "telepathy"
    )
    # An unsigned read-back cited by the agent proves no more than its word (P1).
    assert _ext(cited)["proof_level"].startswith("P1")
    await _replay([history])


async def test_a_probe_the_claimant_brings_verifies_no_absent_outcome(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    """A claim's own plan was read back as its proof: a probe whose answer does not depend on
    the work (a post that was already there) verified a claim whose outcome is absent."""
    site.posts.append({"slug": "already-there"})
    async with _roles(temporal_dev, tmp_path, site) as roles:
        constant, _ = await _settle(
            roles,
            own_plan("c-own", "already-there", outcome="one post brand-new is on the site"),
        )
        # The same kind of claim citing an artifact: graded P2 (built), still never done.
        cited, _ = await _settle(
            roles,
            own_plan(
                "c-own-cited",
                "already-there",
                proof=[{"kind": "commit", "ref": "3f2c1a9", "result": "pass"}],
            ),
        )
        history = await roles.temporal.get_workflow_handle("c-own#claim-1").fetch_history()
        stored = await _rows(roles, "c-own")
    for receipt in (constant, cited):
        ext = _ext(receipt)
        assert receipt.verdict not in ("verified", "reconciled"), ext
        assert ext["meets_bar"] is False and ext["proof_level"] in ("P0", "P1", "P2"), ext
        assert any(
            f.startswith("DOD-2: the claim brought its own proof_plan") for f in ext["findings"]
        ), ext["findings"]
    assert (cited.verdict, _ext(cited)["proof_level"]) == ("built", "P2")
    assert site.count_reads == 0  # the verifier ran no probe the claimant chose
    assert [r.verdict for r in stored] == [constant.verdict]
    await _replay([history])


async def test_a_history_that_read_a_claims_own_plan_back_replays() -> None:
    """Recorded before claims were judged by contracts: the claim's own plan read back (a post
    already there), and verified. Running histories like it replay as recorded."""
    path = Path(__file__).parent / "histories" / "verify_claim" / "own_plan.json"
    await _replay([WorkflowHistory.from_json(path.stem, json.loads(path.read_text()))])


async def test_an_outcome_class_the_runner_cannot_judge_by_is_never_done(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    site.posts.append({"slug": "there"})
    claims = {
        "c-unknown": _input({**log("c-unknown", "there"), "outcome": "posts.deleted"}),
        "c-typed": _input(contract("c-typed", "there", params={"slug": 7})),
        "c-missing": _input(contract("c-missing", "there", params={})),
        # Started as act code could start it, pinned to contracts the runner does not hold.
        "c-pinned": _input(contract("c-pinned", "there")).model_copy(
            update={"contracts_sha256": "0" * 64}
        ),
    }
    async with _roles(temporal_dev, tmp_path, site) as roles:
        settled = {}
        for task_id, inp in claims.items():
            started = await start_claim(roles.temporal, inp, task_queue=roles.queues["runner"])
            settled[task_id] = await wait_result(started.handle)
        history = await roles.temporal.get_workflow_handle("c-unknown#claim-1").fetch_history()
    assert site.count_reads == 0
    said = {}
    for task_id, receipt in settled.items():
        ext = _ext(receipt)
        assert receipt.verdict not in ("verified", "reconciled"), (task_id, ext)
        assert ext["meets_bar"] is False
        said[task_id] = " ".join(ext["findings"])
    assert "'posts.deleted' is not in the operator's claim contracts" in said["c-unknown"]
    assert "declared: posts.published" in said["c-unknown"]
    assert "parameter 'slug' must be a string" in said["c-typed"]
    assert "needs the parameter 'slug' (string); add it" in said["c-missing"]
    assert "give the runner the same file" in said["c-pinned"]
    await _replay([history])


async def test_a_replayed_claim_is_never_verified_twice(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    site.posts.append({"slug": "once"})
    async with _roles(temporal_dev, tmp_path, site) as roles:
        first, existing = await _settle(roles, contract("c-once", "once"))
        first_run = (await roles.temporal.get_workflow_handle("c-once#claim-1").describe()).run_id
        reads = site.count_reads
        again, existing_again = await _settle(roles, contract("c-once", "once"))
        # Second guard, the ledger: the same claim started as a new run of its id (as after
        # Temporal forgot the first, past its retention) returns the stored receipt unread.
        handle = await roles.temporal.start_workflow(
            VERIFY_CLAIM_WORKFLOW,
            _input(contract("c-once", "once")),
            id="c-once#claim-1",
            task_queue=roles.queues["runner"],
            result_type=Receipt,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        forgotten = await handle.result()
        assert handle.result_run_id != first_run
        history = await handle.fetch_history()
        stored = await _rows(roles, "c-once")
    assert first.verdict == "verified" and not existing and existing_again
    assert site.count_reads == reads  # neither the replay nor the forgotten run read again
    assert again.model_dump() == first.model_dump()
    assert forgotten.model_dump(mode="json") == stored[0].model_dump(mode="json")
    assert len(stored) == 1
    await _replay([history])


async def test_reconcile_stream_reports_bad_lines_and_keeps_the_rest(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    site.posts.append({"slug": "s1"})
    lines = [
        json.dumps(contract("s-1", "s1")),
        "{not json",
        '{"task_id": "s-dup", "claimed_status": "done", "claimed_status": "failed"}',
        json.dumps({"claimed_status": "done"}),
        "",
        json.dumps(log("s-2", "s2")),
        # The same task id and attempt for other work: reported, never taken as this claim's.
        json.dumps(contract("s-1", "elsewhere")),
        # Another attempt of the same task is verified on its own; other work under the task
        # id fails closed, naming the fix.
        json.dumps(contract("s-1", "s1", attempt=2)),
        json.dumps(contract("s-1", "elsewhere", attempt=3)),
    ]
    stream = tmp_path / "claims.jsonl"
    stream.write_text("\n".join(lines) + "\n")
    async with _roles(temporal_dev, tmp_path, site) as roles:
        events: list[dict[str, Any]] = []
        tally = await reconcile(
            roles.temporal,
            Tail(stream, max_line=4096),
            task_queue=roles.queues["runner"],
            concurrency=2,
            emit=events.append,
        )
        replayed: list[dict[str, Any]] = []
        again = await reconcile(
            roles.temporal,
            Tail(stream, max_line=4096),
            task_queue=roles.queues["runner"],
            concurrency=2,
            emit=replayed.append,
        )
    bad = {e["line"]: e["message"] for e in events if e["event"] == "invalid"}
    assert sorted(bad) == [2, 3, 4]
    assert "not valid JSON" in bad[2]
    assert "'claimed_status' appears twice" in bad[3]
    assert "no task_id" in bad[4] and 'add "task_id"' in bad[4]
    settled = {e["line"]: e for e in events if e["event"] == "settled"}
    assert sorted(settled) == [1, 6, 7, 8]
    assert settled[1]["verdict"] == "verified" and settled[6]["verdict"] != "verified"
    assert "already settled for another claim" in settled[7]["conflict"]
    assert settled[8]["verdict"] == "verified" and settled[8]["workflow_id"] == "s-1#claim-2"
    (failed,) = [e for e in events if e["event"] == "failed"]
    assert failed["line"] == 9 and "give the new task its own task_id" in failed["message"]
    assert (tally.settled, tally.verified, tally.not_verified, tally.invalid) == (4, 2, 2, 3)
    assert tally.failed == 1
    # The same stream again: every claim attaches to its settled workflow, none is read again.
    # A failed run settled nothing: only it may run again (and fails again the same way).
    assert again.existing == 4 and again.settled == 4 and again.failed == 1
    assert all(e["existing"] for e in replayed if e["event"] == "settled")


async def test_claims_that_name_a_loop_feed_its_tripwire(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    """Claims feed loops like any task: three claims of a loop that cannot be proven (words
    only, no read-back) trip the loop's tripwire, recorded in the ledger; with no repair
    declared, the loop is held for a person."""
    loop = f"outside-{uuid.uuid4().hex[:6]}"
    ids = [f"{loop}-c{i}" for i in range(3)]
    async with _roles(temporal_dev, tmp_path, site) as roles:
        for task_id in ids:
            receipt, _ = await _settle(roles, log(task_id, loop=loop))
            assert receipt.verdict != "verified" and _ext(receipt)["loop"] == loop

        async def held() -> TripwireState | None:
            try:
                state = await loop_state(roles.temporal, loop)
            except UnknownLoop:  # the first signal starts it, a moment after settle
                return None
            return state if state.phase == "held" else None

        state = await until(f"tripwire {loop} held", held, every=0.5)  # a query: not too often
        ledger = await roles.ledger()
        events = await ledger.events(loop)
        await ledger.close()
        await roles.temporal.get_workflow_handle(tripwire_id(loop)).signal(STOP_SIGNAL)
    (trip,) = state.trips
    assert trip.rule == "3 not-done in a row" and trip.repair_task_id is None
    assert sorted(trip.receipts) == [f"{t}#1" for t in ids]
    assert [(e.key, e.body["receipts"]) for e in events] == [(f"trip:{loop}:1", trip.receipts)]


async def _replay(histories: list[WorkflowHistory]) -> None:
    shared = Replayer(workflows=[VerifyClaim], plugins=[landed_plugin()])
    # Re-imported under the SDK's restricted standard library: a nondeterministic call fails.
    strict = Replayer(
        workflows=[VerifyClaim],
        data_converter=pydantic_data_converter,
        workflow_runner=strict_workflow_runner(),
    )
    for replayer in (shared, strict):
        for history in histories:
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            assert result.replay_failure is None, (history.workflow_id, result.replay_failure)
