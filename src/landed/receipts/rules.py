"""landed's rule catalogue: every rule of the Definition of Done v1.0 (DOD-n) and of its
governance (GOV-n) that landed's code, findings and docs name, with what it means, how landed
holds it and where a user sees it. ``landed explain`` prints it; tests/cli/test_explain.py scans
the source and the docs so that every rule id used there has its entry here."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["RULES", "Rule", "find_rule", "rule_ids"]


@dataclass(frozen=True)
class Rule:
    """One rule: its id, a title, one paragraph of meaning, how landed enforces it and which
    command or receipt field shows it."""

    id: str
    title: str
    meaning: str
    enforced: str
    shown_by: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


RULES: tuple[Rule, ...] = (
    Rule(
        "DOD-1",
        "A task is named before work starts",
        "Before any work, a task says what will be true when it is done (the observable "
        "after-state, its `outcome`), where (its `target`) and how that will be read back (its "
        "proof plan). Done is then measured against what was promised, not against what the "
        "agent chose to report afterwards.",
        "`TaskSpec` requires an owner and an outcome and is validated before anything starts; "
        "a task whose plan nothing can check settles blocked before any act.",
        "`landed submit` (refuses a bad spec, exit 3), `landed plan lint`; the receipt's "
        "`outcome`, `target` and `proof`.",
    ),
    Rule(
        "DOD-2",
        "Someone other than the doer grades the work",
        "The agent that acted, and the task's owner, never grade their own work. A read-back "
        "counts only when another identity made it; a verdict by the owner or the actor is "
        "void; an independent verdict that the task is not done outweighs a done claim; a check "
        "the claimant brought counts at most as an artifact (P2).",
        "The actor and the verifier are separate processes with their own identities, queues "
        "and credentials (a role configured as another is refused); the verifier signs what it "
        "read with its Ed25519 key, and the grading refuses readings by the actor or the owner.",
        "`landed check --trust KEY.pub` (findings under DOD-2); the receipt's "
        "`proof[].checked_by`, `verdict_by` and `proof[].landed.signature`.",
    ),
    Rule(
        "DOD-3",
        "An exit code proves nothing",
        "A process that exited 0 says it stopped, not that its work landed. An exit code, or a "
        "command's success, is a claim; a done claim that rests on it is not carried.",
        "The grading gives an exit code no proof level, and names it when a done claim falls "
        "short of its bar; the built-in shell act's exit 0 only claims done, and the verifier "
        "still reads the outcome back.",
        "`landed check` (finding DOD-3); the receipt's `exit_code`.",
    ),
    Rule(
        "DOD-4",
        "The proof checks the expected content, not just that something answered",
        "A read-back proves an outcome only when it looks for what the outcome is: a page check "
        "names the text it must find (a non-empty page is not enough), a kind of proof that is "
        "no read-back counts as an assertion, and a plan whose other read-backs disagree with "
        "the claim shows only part of the outcome.",
        "The grading caps weak, unknown or contradicted proofs below P3; `landed check --live` "
        "re-reads each page check and downgrades one whose text is gone (never upgrades).",
        "`landed check` and `landed check --live` (finding DOD-4); the receipt's "
        "`proof[].expect` and `proof[].result`.",
    ),
    Rule(
        "DOD-5",
        "Cited proof must resolve, and every declared step must pass",
        "A proof that is cited but cannot be found, or was checked and did not resolve, takes "
        "the claim down a rung. A task is done only when every step of its declared proof plan "
        "read back pass: a plan step that read back anything else means not done.",
        "The grading downgrades unresolved artifacts and missing read-backs; the workflow's "
        "verdict requires every declared plan step to pass; `landed check --live` downgrades a "
        "page that is gone.",
        "`landed check` (finding DOD-5), `landed receipt TASK`; the receipt's `proof[].result` "
        "and `verdict`.",
    ),
    Rule(
        "DOD-6",
        "The status claimed is no higher than the proof reaches",
        "Each status has a proof bar: done needs P3 (an independent read-back that passed), "
        "reconciled needs P4 (P3 plus a verified business outcome). A claim above what its "
        "proof shows is graded down to the highest status it honestly reaches.",
        "The grading computes the proof level and the honest rung of every receipt, in "
        "`landed check` and in the workflow alike; the workflow settles on the proven rung.",
        "`landed check` (`proof_level`, `meets_bar`, finding DOD-6); the receipt's "
        "`landed.rung` and the `LandedRung` search attribute.",
    ),
    Rule(
        "DOD-7",
        "The report's words beat the status",
        "When the report (or the status itself) says blocked, waiting, pending, partial, could "
        "not or not yet, the work is not done, whatever the status says. Negation is "
        'deliberately not parsed: "no longer blocked" still counts as blocked.',
        "The grading reads the report's words before it accepts a done claim and holds the "
        "claim below done when one of them is there.",
        "`landed check` (finding DOD-7); the receipt's `report` and `claimed_status`.",
    ),
    Rule(
        "DOD-8",
        "A scaffold is not the outcome",
        "A mock, stub, placeholder, local build or a loopback target stands in for the real "
        "thing; proof of it is proof of the scaffold. It counts at most as an artifact (P2) "
        "unless the outcome names the scaffold itself as the deliverable.",
        "The grading caps the proof at an artifact when the target, a read-back or the report "
        "names a scaffold.",
        "`landed check` (finding DOD-8); the receipt's `target`, `proof[].ref` and `report`.",
    ),
    Rule(
        "DOD-9",
        "A blocked task names its condition and who can clear it",
        "A task that cannot go on says exactly what blocks it and who can clear it, and parks "
        "only itself: the rest of the work settles. Blocked is a state to act on, not a "
        "failure to hide.",
        'An act returns `ActReport(claimed_status="blocked", blocked_on=..., clear_by=...)`; '
        "landed's own blocks (no check that can run, refused contact, a paused fleet past its "
        "cap, no healthy harness) settle blocked with the condition and who can clear it.",
        "`landed board`, `landed receipt TASK`; the receipt's `landed.blocked`.",
    ),
    Rule(
        "DOD-10",
        "An unknown write is read back before any retry",
        "An act that raised or timed out may have written part or all of its outcome. Running "
        "it again blind could write a second copy, so the outcome is read back first; the act "
        "runs again (with the same idempotency key) only if nothing of its write landed.",
        "The act is never retried by Temporal; the workflow reads back after an act error, "
        "decides whether the act may run again, and passes the task's idempotency key to every "
        "attempt; a second run of a settled task id attaches to its receipt.",
        "`landed receipt TASK` (finding DOD-10 names the first run); the receipt's "
        "`landed.attempt` and `proof`.",
    ),
    Rule(
        "GOV-1",
        "Every task has one owner",
        "One agent owns each task and answers for it; the owner cannot grade its own work (DOD-2).",
        "`TaskSpec.owner` is required; the grading refuses the owner as checker or verdict.",
        "`landed board --owner NAME`; the receipt's `owner`.",
    ),
    Rule(
        "GOV-2",
        "The outcome ledger is append-only",
        "Every settled receipt is appended and never updated or deleted; the board is a "
        "projection of the ledger, so what was decided stays on record.",
        "The ledger refuses an update or delete (SQLite triggers, PostgreSQL grants), stores a "
        "second settle of the same attempt once, and chains every row with signed heads.",
        "`landed ledger verify`, `landed board`, `landed receipts export`.",
    ),
    Rule(
        "GOV-4",
        "Every act is bounded: a time cap, and a switch that stops the fleet",
        "Every task runs under a time cap (its own, the runner's, else 30 minutes), and one "
        "switch pauses every new act in the namespace. Past the cap no act starts and what "
        "was written is read back; a switch that cannot be read counts as paused.",
        "The workflow enforces the cap and settles failed past it; the runner's gate reads the "
        "fleet switch before each act dispatch.",
        "`landed pause`, `landed resume`, `landed status`; the finding "
        "`GOV-4: time cap ... reached` on the receipt.",
    ),
    Rule(
        "GOV-5",
        "An act that cannot be undone waits for a person's approval",
        "A task whose act sends, publishes, spends, provisions or migrates waits for a person "
        "before it acts. The decision is signed by a key the runner trusts, and neither the "
        "owner nor the actor may give it.",
        "The workflow holds the task at its approval gate; the actor refuses an irreversible "
        "act without an approval; a receipt that claims an approval without a valid signature "
        "counts at most as an artifact.",
        "`landed held`, `landed approve`, `landed reject`, `landed check --trust-approver`; "
        "the receipt's `approval`.",
    ),
    Rule(
        "GOV-6",
        "Consent before contact",
        "An act that reaches a person runs only when a consent row exists for that person and "
        "channel and no do-not-contact row does. A check that cannot be read blocks the task.",
        "The verifier reads consent and do-not-contact from the task's consent source before "
        "the act; otherwise the task settles blocked and the act never runs.",
        "`landed receipt TASK`; the receipt's `landed.consent`, and a refusal's GOV-6 finding "
        "(`receipt.why`).",
    ),
    Rule(
        "GOV-7",
        "Waiting for a decision is held, not failed",
        "A task waiting at its approval gate, rejected, or not decided on within its approval "
        "timeout is held: terminal, nothing done, counted in the hold rate, never failed.",
        "The workflow settles held with nothing acted when a person rejects or nobody decides.",
        "`landed held`, `landed board`; the `LandedRung` search attribute (`held`).",
    ),
    Rule(
        "GOV-8",
        "Cost is recorded by phase",
        "Each receipt records what the act cost (its tokens and dollars) and what verifying it "
        "cost (reads, probe seconds, provider dollars), so the price of a verified outcome is "
        "known.",
        "The runner measures the verify phase and adds the act's reported cost at settle.",
        "`landed check` (`cost_per_verified_task`), `landed exporter` "
        "(`landed_cost_usd_total`); the receipt's `landed.cost`.",
    ),
    Rule(
        "GOV-9",
        "A loop has a tripwire",
        "Recurring work is declared as a loop, and a tripwire watches its settlements: no "
        "verified settlement within the silence window, too many not verified in a row or a "
        "proof rate under its floor trips it and queues exactly one repair.",
        "One tripwire workflow per loop, signalled by every settled receipt of the loop; each "
        "trip is an append-only event in the ledger.",
        "`landed loops`, `landed loop describe LOOP`, `landed repair done`; the receipt's "
        "`landed.loop` and the `LandedLoop` search attribute.",
    ),
    Rule(
        "GOV-10",
        "A harness failure releases the task, it does not fail it",
        "When an act's harness cannot work (expired auth, a usage limit, an outage) before it "
        "wrote anything, the task is released to the next harness of the pool; a harness that "
        "keeps failing is taken out for a while, fleet-wide.",
        "The runner's gate rotates the actor pool and reads the fleet's cool-downs before each "
        "dispatch; with no harness healthy the task settles blocked.",
        "`landed status`; the receipt's `landed.harness`; `landed_harness_releases_total`.",
    ),
    Rule(
        "GOV-11",
        "Loosening a gate needs its false positive as a test",
        "A rule or an alert is never weakened to make a page or a finding go away; a change "
        "that loosens a gate comes with the false positive it fixes, as a test.",
        "A rule of landed's own development and operation: each grading rule carries tests that "
        "fail without it, and the runbooks say to fix the cause instead of lowering an objective.",
        "`docs/runbooks.md`.",
    ),
    Rule(
        "GOV-12",
        "The scorecard: proof rate, hold rate, cost per verified task",
        "The fleet is judged on what was proven: the share of done claims that were proven, "
        "the share of tasks held, the cost per verified task and the revenue verified outcomes "
        "brought.",
        "Computed by the same code from receipts (`landed check`) and from the ledger (the "
        "exporter's Prometheus metrics and recording rules).",
        "`landed check` (`scorecard`), `landed exporter`, the fleet dashboard.",
    ),
)

_BY_ID = {rule.id: rule for rule in RULES}


def rule_ids() -> list[str]:
    """Every rule id of the catalogue, in its order."""
    return [rule.id for rule in RULES]


def find_rule(given: str) -> Rule | None:
    """The rule ``given`` names (``DOD-2``, ``dod-2``, ``dod2``), or None."""
    text = given.strip().upper().replace("_", "-")
    if "-" not in text:
        text = text[:3] + "-" + text[3:]
    return _BY_ID.get(text)
