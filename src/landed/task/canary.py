"""The rollout gate's canary: one task acted, read back and settled on a new build before any
real task reaches it, and the one rule that says whether it proves the build (``judge``).

The built-in canary does no harm: it inserts one marker row into a table the operator names
(through an actor credential) and the verifier counts it back (through one of its sources). An
operator may declare a task of their own instead (``task``); it is held to the same rule.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CanaryFacts", "CanaryInput", "canary_task", "judge"]

_IDENT = r"^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$"
#: Placeholders of the two drivers the built-in act and probe use (landed passes them through).
_MARK = {"postgresql": ("%(marker)s", "%s"), "sqlite": (":marker", "?")}


class CanaryInput(BaseModel):
    """The gate's input: the Worker Controller's rollout.gate input (a ConfigMap's JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(min_length=1, description="The verifier's source holding the table.")
    credential: str = Field(min_length=1, description="The actor's credential (a DSN) for it.")
    table: str = Field(pattern=_IDENT, description="The canary table: marker text primary key.")
    dialect: Literal["postgresql", "sqlite"] = "postgresql"
    task: dict[str, Any] | None = Field(
        default=None, description="An operator-declared canary task (its own act and proof)."
    )
    expect_build_id: str | None = Field(
        default=None,
        description="The build the canary's verifier must be; default: the gate's own (one "
        "build id per release for every role). The runner is always held to the gate's own.",
    )
    timeout_s: float = Field(default=600.0, gt=0, le=3600)
    wait_for_verifier_s: float = Field(
        default=60.0,
        ge=0,
        le=86_400,
        description="How long the gate waits for the verifier's task queue to route to the "
        "build it must prove before the canary starts: Temporal sends the canary's reads to the "
        "verifier's current build only.",
    )


class CanaryFacts(BaseModel):
    """What the runner found after the canary settled: its ledger row, the chain, and which
    builds Temporal recorded as running the canary's verify and settle steps."""

    task_id: str
    verdict: str | None = None
    verdict_by: str | None = None
    key_id: str | None = None
    key_trusted: bool = False
    chain_findings: list[str] = Field(default_factory=list)
    verifier_builds: list[str] = Field(default_factory=list)
    runner_builds: list[str] = Field(default_factory=list)


def canary_task(inp: CanaryInput, marker: str, task_id: str) -> dict[str, Any]:
    """The canary's task spec (validated by the workflow that starts it)."""
    if inp.task is not None:
        return {**inp.task, "task_id": task_id}
    named, positional = _MARK[inp.dialect]
    return {
        "task_id": task_id,
        "owner": "landed-rollout-gate",
        "outcome": f"the canary marker {marker} is in {inp.table}",
        "target": f"{inp.source}: table {inp.table}",
        "act": {
            "name": "sql.execute",
            "input": {
                "credential": inp.credential,
                "statement": f"insert into {inp.table} (marker) values ({named}) "
                "on conflict do nothing",
                "params": {"marker": marker},
            },
        },
        "proof_plan": [
            {
                "action": "write the canary marker",
                "probe": {
                    "kind": "record",
                    "source": inp.source,
                    "query": f"select count(*) from {inp.table} where marker = {positional}",
                    "params": [marker],
                },
                "expect": {"type": "count", "value": 1},
            }
        ],
    }


def judge(facts: CanaryFacts, build_id: str, verifier_build: str | None = None) -> list[str]:
    """Why the canary does not prove build ``build_id`` (and its verifier ``verifier_build``,
    by default the same); empty when it does. Fails closed: a fact not found is a reason."""
    found: list[str] = []
    if facts.verdict != "verified":
        found.append(f"the canary settled {facts.verdict or 'nothing'}, not verified")
    if not facts.key_id or not facts.key_trusted:
        key = facts.key_id or "no key"
        found.append(f"the canary's reading is not signed by a trusted verifier key ({key})")
    found += [f"the ledger's chain does not hold: {f}" for f in facts.chain_findings]
    expected = (
        ("verifier", facts.verifier_builds, verifier_build or build_id),
        ("runner", facts.runner_builds, build_id),
    )
    for role, builds, want in expected:
        if builds != [want]:
            shown = ", ".join(b or "an unversioned worker" for b in builds) or "no build"
            found.append(f"the canary's {role} steps ran on {shown}, not build {want}")
    return found
