"""Deterministic orchestration only, no side effect: AgentTask (one agent task: plan, gates,
act, read-back, settle), VerifyClaim (a claim from outside Temporal read back), Recheck (a
verified outcome read again at its horizon), ReceiptLookup (a forgotten task's receipt from the
ledger), Tripwire and LoopRun (a loop's watch and its Schedule's action), Fleet (the kill
switch), LandedPreflight (the roles asked before a task starts), RolloutGate (a canary task
on a new build) and Witness (`LandedLedgerWitness`: the runner's signed heads, outside the
ledger)."""

from __future__ import annotations

__all__: list[str] = []
