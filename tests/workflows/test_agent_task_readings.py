"""Which readings prove an AgentTask: only the trusted verifier's own reading of this run, held
to its plan step and the task's pre-read; readings the actor copied, took under its own
identity, or a worker on the verifier's queue relayed, forged or dressed up count for nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_task import agent_roles, read_back, verdicts_match_checker
from helpers.relay import relayed, through_relay
from helpers.roles import run_roles
from helpers.sor import Site, act_runs, make_rows_db, row_count, rows_task

from landed.ledger.base import canonical_json
from landed.probes.contract import Contract, Observation, Outcome
from landed.signing import KeyPair, sign_proof
from landed.task.assemble import proof_item


async def test_signed_readings_in_the_act_report_count_for_nothing(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The actor copies verifier-signed passes (a pre-read, and an after-read from another run)
    into its own report next to a vacuous read-back: they stay the actor's assertions."""
    make_rows_db(db, preexisting=45, batch="sm")
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        key = KeyPair.load(roles.public_key.with_suffix(".key"))
        task = rows_task("smuggle", db, expect=45, batch="sm")
        contract = Contract.model_validate(task["proof_plan"][0])
        seen = Observation(
            outcome=Outcome.PASS,
            expectation="count(45)",
            kind="record",
            source="rows-db",
            observer=roles.identities["verifier"],
            observed_at=datetime.now(UTC),
            duration_ms=1.0,
            value=45,
        )
        item = proof_item(contract, seen, checked_by=roles.identities["verifier"])
        smuggled = [
            sign_proof(
                key, task_id="smuggle", attempt=1, proof=item, observation=seen, phase=p, run_id=r
            )
            for p, r in (("before", ""), ("after", "an-earlier-run"))
        ]
        task["act"]["input"]["artifacts"] = [s.model_dump(mode="json") for s in smuggled]
        receipt = await roles.client.run(task)
    # Only the verifier's own reading of this run is a read-back, and it saw a vacuous pass.
    assert [(p.result, p.checked_by) for p in read_back(receipt)] == [
        ("vacuous", roles.identities["verifier"])
    ]
    cited = receipt.proof[:2]
    for proof in cited:
        assert proof.kind == "assertion"
        assert proof.checked_by == roles.identities["actor"]
        assert proof.landed is None
    assert receipt.verdict not in ("verified", "reconciled")
    await verdicts_match_checker(roles, receipt)


@pytest.mark.parametrize("fail", [None, "after", "before", "timeout"])
async def test_a_reading_under_the_actors_identity_is_not_a_read_back(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, fail: str | None
) -> None:
    """_independent: when the verifier runs under the actor's identity, its readings are the
    actor grading itself (DOD-2): probe-error, never verified, though the rows landed. An act
    that raised or timed out leaves no report naming its actor; the identity that failed the
    attempt (or named itself in the attempt's heartbeats) counts the same, and its "nothing
    landed" never runs the act again."""
    shared = {"actor": "same-box", "verifier": "same-box"}
    failing: dict[str, Any] = {"fail": fail, "fail_attempts": 1} if fail else {}
    if fail == "timeout":  # writes, then outlives the time cap while it beats
        failing = {"sleep_after_s": 6}
    async with run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}", "site": site.url},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        identities=shared,
    ) as roles:
        task = rows_task(f"self-graded-{fail}", db, expect=2, batch="sg", write=2, **failing)
        if fail == "timeout":
            task["time_cap"] = 3
        receipt = await roles.client.run(task)
    assert row_count(db, "sg") == (0 if fail == "before" else 2)
    assert act_runs(db, f"self-graded-{fail}") == [(1, f"self-graded-{fail}")]
    (proof,) = read_back(receipt)
    assert proof.result == "probe-error"
    assert proof.checked_by == roles.identities["runner"]
    assert "can't grade itself" in str((proof.landed or {}).get("observation"))
    assert receipt.verdict not in ("verified", "reconciled")


@pytest.mark.parametrize("mode", ["forged-before", "unsigned-before"])
async def test_a_forged_pre_read_cannot_make_rows_that_were_there_count(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str
) -> None:
    """45 rows were there before; the act writes none. A worker on the verifier's queue answers
    the pre-read with "0 rows" (the genuine signature over the genuine 45, or no signature):
    the real verifier would then sign a change of 45 as a pass. The workflow holds the pre-read
    to the trusted verifier's signature, so the before-state is unknown and nothing is proven."""
    make_rows_db(db, preexisting=45, batch="pre")
    receipt, observation = await through_relay(temporal_dev, tmp_path, db, mode, "pre", 45)
    (proof,) = read_back(receipt)
    assert proof.result == "probe-error", proof
    assert receipt.verdict != "verified"
    assert "not a trusted verifier's" in observation, observation
    assert act_runs(db, f"relayed-{mode}") == [(1, f"relayed-{mode}")]


@pytest.mark.parametrize("mode", ["forged-reconcile", "stale-reconcile", "stale-norequest"])
async def test_a_false_reconcile_read_does_not_run_the_act_again(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str
) -> None:
    """The act writes its 3 rows, then errors. The first read after it is answered with "0
    rows": unsigned (forged), or a genuine signed reading of this run and attempt taken before
    the act ran (stale). Taken at its word, the act would run again and write 3 more. Held to
    the verifier's signature, the forged one observed nothing, so the act is not run again
    (DOD-10); the stale one answers another read's request id (or none), so the read is asked
    again and sees the rows."""
    make_rows_db(db)
    receipt, _ = await through_relay(
        temporal_dev, tmp_path, db, mode, "fr", 3, write=3, fail="after", fail_attempts=1
    )
    assert act_runs(db, f"relayed-{mode}") == [(1, f"relayed-{mode}")]
    assert row_count(db, "fr") == 3
    assert receipt.landed is not None
    if mode.startswith("stale-"):
        assert receipt.verdict == "verified"
    else:
        assert receipt.verdict != "verified"
        assert any("DOD-10" in f for f in receipt.landed.findings), receipt.landed.findings


@pytest.mark.parametrize("mode", ["no-before", "other-before", "easier-expect"])
async def test_a_relayed_reading_of_something_else_is_not_a_read_back(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str
) -> None:
    """45 rows were there before; the act writes none. A worker on the queue the runner reads
    from relays each read to the real verifier without the before-state, or under an easier
    expectation: the readings come back signed with the trusted key, and still count for
    nothing, because each is held to its plan step and the task's pre-read."""
    make_rows_db(db, preexisting=45, batch="pre")
    receipt, observation = await through_relay(temporal_dev, tmp_path, db, mode, "pre", 45)
    (proof,) = read_back(receipt)
    assert proof.result == "probe-error", proof
    assert receipt.verdict != "verified"
    assert receipt.landed is not None and receipt.landed.proof_level != "P3"
    why = {
        "no-before": "before-state from the pre-read",
        "other-before": "another probe was run",
        "easier-expect": "expectation",
    }
    assert why[mode] in f"{proof} {observation}", (proof, observation)


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("dressed-up", "differs from the observation the verifier signed"),
        ("probe-error-cover", "says nothing was observed, but its proof says pass"),
        ("swapped-before-outcome", "handed another before-state"),
        ("keyless-signature", None),
    ],
)
async def test_a_genuine_signature_under_a_dressed_up_reading_is_not_a_read_back(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str, why: str | None
) -> None:
    """45 rows were there before; the act writes none. A worker on the queue the runner reads
    from gets a genuine signed reading of something weaker (an easier expectation, or the
    task's before value with its outcome swapped so the verifier sees a change) and shows the
    plan step beside it, or strips the signature's key id. None of them verifies, and the task
    still settles."""
    make_rows_db(db, preexisting=45, batch="pre")
    task = rows_task(f"dressed-{mode}", db, expect=45, batch="pre")
    # A state comparison, so a before reading that already passed makes the after one vacuous.
    task["proof_plan"][0]["expect"] = {"type": "equals", "value": 45}
    async with relayed(temporal_dev, tmp_path, db, mode) as roles:
        receipt = await roles.client.run(task)
        async with await roles.ledger() as ledger:
            stored = await ledger.get(task["task_id"])
    (proof,) = read_back(receipt)
    assert receipt.verdict != "verified", receipt
    assert receipt.landed is not None and receipt.landed.proof_level != "P3", receipt.landed
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]
    assert act_runs(db, task["task_id"]) == [(1, task["task_id"])]
    if why is not None:
        assert proof.result == "probe-error", proof
        assert why in str((proof.landed or {}).get("observation")), proof.landed
