"""The one rule of what cannot be checked (landed.task.checkable), without Temporal."""

from __future__ import annotations

from typing import Any

from landed.probes.policy import refusal
from landed.probes.sources import SourceRegistry
from landed.receipts.model import LandedExtension, Receipt
from landed.task.checkable import (
    act_problem,
    blocked_report,
    cache_key,
    config_problems,
    refused_step,
    to_check,
    with_fix_first,
)
from landed.task.spec import TaskSpec


def _spec(probe: dict[str, Any], frame: dict[str, Any] | None = None, **extra: Any) -> TaskSpec:
    contract = {"action": "rows landed", "probe": probe, "expect": {"type": "count", "value": 1}}
    frames = [{**contract, "action": "others kept", "probe": frame}] if frame else []
    return TaskSpec.model_validate(
        {
            "task_id": "t",
            "owner": "a",
            "outcome": "o",
            "act": {"name": "test.rows"},
            "proof_plan": [contract],
            "frames": frames,
            **extra,
        }
    )


_RECORD = {"kind": "record", "source": "rows-db", "query": "select 1", "params": ["a"]}


def test_every_plan_step_frame_and_consent_source_is_named_for_the_check() -> None:
    contacts = {"kind": "message", "recipient": "r@x.test", "consent_source": "consent-db"}
    inp = to_check(_spec(_RECORD, {**_RECORD, "source": "other-db"}, contacts=contacts))
    assert inp.act == "test.rows"
    assert inp.config.labels == ["plan step 1 (rows landed)", "frame 1 (others kept)"]
    assert inp.config.sources == ["consent-db"]


def test_the_verifiers_refusals_are_labelled_and_carry_their_fix() -> None:
    inp = to_check(_spec(_RECORD, {**_RECORD, "source": "other-db"}))
    registry = SourceRegistry({"rows-db": {"url": "sqlite:///x.db"}})
    found = config_problems(inp.config, lambda p: refusal(p, registry), lambda _: None)
    assert len(found) == 1 and found[0].startswith("frame 1 (others kept): refused: ")
    assert "LANDED_SOURCES__OTHER_DB__URL" in found[0]


def test_an_unknown_act_names_the_registered_ones_and_the_fix() -> None:
    assert act_problem("test.rows", ["test.rows"]) is None
    said = act_problem("nope", ["b", "a"]) or ""
    assert "registered: a, b" in said and "LANDED_ACTOR_ACTS" in said


def test_a_cached_answer_is_keyed_by_what_the_verifier_judges() -> None:
    base = to_check(_spec(_RECORD))
    other_params = to_check(_spec({**_RECORD, "params": ["b"]}))
    other_source = to_check(_spec({**_RECORD, "source": "else-db"}))
    command = {"kind": "command", "source": "tools", "argv": ["git", "status"]}
    longer = {**command, "argv": ["git", "status", "--porcelain"]}
    assert cache_key(base) == cache_key(other_params)  # the task's data, not its shape
    assert cache_key(base) != cache_key(other_source)
    assert cache_key(to_check(_spec(command))) != cache_key(to_check(_spec(longer)))
    renamed = to_check(_spec(_RECORD)).model_copy(update={"act": "test.other"})
    assert cache_key(base) != cache_key(renamed)


def test_the_blocked_receipt_puts_the_fix_first() -> None:
    problems = [refused_step("frame-before", 0, "refused: no source named 'x'; add it")]
    assert problems == ["frame 1: refused: no source named 'x'; add it"]
    report = blocked_report(problems)
    assert (
        report.claimed_status == "blocked" and report.blocked_on and "add it" in report.blocked_on
    )
    receipt = Receipt(
        task_id="t",
        claimed_status="blocked",
        landed=LandedExtension.model_validate({"findings": ["DOD-9: later"]}),
    )
    findings = getattr(with_fix_first(receipt, problems).landed, "findings", [])
    assert findings[0].startswith("DOD-9: blocked before any act") and "add it" in findings[0]
    assert findings[1:] == ["DOD-9: later"]
