"""Who may approve, as the runner's operator configured it (GOV-5): whether a person is the
task's approver or in the group it names, whether a name is the actor's (who may never approve),
and whether a decision's signature counts. Pure: the runner reads the key files
(``landed.temporal.approver_keys``) and hands them over in its routing, recorded in history, as
the wire contract's ``landed.task.trust.ApproverTrust``.
"""

from __future__ import annotations

from collections.abc import Mapping

from landed.governance.approval import (
    SignedDecision,
    binding_problem,
    same_name,
    signature_problem,
)
from landed.task.trust import ApproverTrust

__all__ = [
    "APPROVERS_SETTING",
    "is_actor",
    "may_approve",
    "signed_refusal",
]

#: Where the operator configures approver keys (named in every refusal that needs one).
APPROVERS_SETTING = "LANDED_RUNNER_APPROVERS"
_HOW = (
    "make one with `landed keys new --role approver --name NAME` and add its .pub file to "
    f"the runner's {APPROVERS_SETTING}"
)


def is_actor(name: str, actors: list[str]) -> bool:
    """The actor role, by a configured or seen identity, or by the ``actor@host:pid`` form every
    actor worker takes when none is configured (so it holds before the first act too)."""
    return name.strip().casefold().startswith("actor@") or any(same_name(name, a) for a in actors)


def may_approve(name: str, approver: str | None, groups: Mapping[str, list[str]]) -> bool:
    """Whether ``name`` is the task's named approver or in the group it names (any: None)."""
    if not approver:
        return True
    members = next((m for g, m in groups.items() if same_name(g, approver)), None)
    if members is not None:
        return any(same_name(name, m) for m in members)
    return same_name(name, approver)


def signed_refusal(
    signed: SignedDecision | None,
    *,
    by: str,
    decision: str,
    trust: ApproverTrust | None,
    task_id: str,
    run_id: str,
    spec_sha256: str,
) -> str | None:
    """Why a decision's signature is refused (None: a trusted approver key signed exactly this
    decision, for this task, run and spec, under the name ``by``)."""
    if trust is None or not trust.keys:
        return (
            f"this runner trusts no approver key, so task {task_id!r} cannot be approved or "
            f"rejected: {_HOW}, restart the runner, and submit the task again"
        )
    if signed is None:
        return (
            "the decision is unsigned; a decision counts only when signed with an approver's "
            f"key: `landed approve TASK --by NAME --key APPROVER.key` ({_HOW})"
        )
    keys = trust.public_keys()
    by_id = {kid: key for kid, (_, key) in keys.items()}
    problem = binding_problem(
        signed, task_id=task_id, run_id=run_id, spec_sha256=spec_sha256, decision=decision
    ) or signature_problem(signed, by_id, where=f"the runner's {APPROVERS_SETTING}")
    if problem is not None:
        return problem
    holder = keys[signed.key_id][0]
    if not (same_name(holder, by) and same_name(holder, signed.by)):
        return (
            f"key {signed.key_id} is {holder!r}'s approver key, not {by!r}'s: decide with --by "
            f"{holder!r}, or with your own key"
        )
    return None
