"""The runner's own step, ``settle``: sign off on the graded receipt, then append it."""

from __future__ import annotations

from collections.abc import Callable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from landed._ledger import Ledger, LedgerConflict
from landed._receipt import ProofItem, Receipt
from landed._task import SETTLE_ACTIVITY, SettleInput, SettleOutput, SignOff

__all__ = ["RunnerActivities", "runner_facts"]

SignatureCheck = Callable[[Receipt, ProofItem], bool]


def runner_facts(
    receipt: Receipt, signature_ok: SignatureCheck, *, may_skip_pre_read: bool
) -> SignOff:
    """What this runner's configuration says about ``receipt``: which signed proofs it does not
    trust, and whether the receipt skipped a pre-read the runner requires."""
    untrusted = [
        i
        for i, proof in enumerate(receipt.proof)
        if isinstance((proof.landed or {}).get("signature"), dict)
        and not signature_ok(receipt, proof)
    ]
    ext = receipt.landed
    skipped = ext is not None and getattr(ext, "pre_read", True) is False
    has_plan = any((p.landed or {}).get("action") is not None for p in receipt.proof)
    return SignOff(
        untrusted=untrusted, pre_read_refused=skipped and has_plan and not may_skip_pre_read
    )


class RunnerActivities:
    """Holds what only the runner may hold: the ledger, the verifier keys it trusts and its
    pre-read policy."""

    def __init__(
        self, ledger: Ledger, signature_ok: SignatureCheck, *, may_skip_pre_read: bool = False
    ) -> None:
        self._ledger = ledger
        self._signature_ok = signature_ok
        self._may_skip_pre_read = may_skip_pre_read

    @activity.defn(name=SETTLE_ACTIVITY)
    async def settle(self, inp: SettleInput) -> SettleOutput:
        """Append the receipt if it was graded with this runner's facts; a retry of the same
        (task_id, attempt) appends nothing. Otherwise append nothing and return the facts, so
        the workflow grades again with them: no receipt enters the ledger graded on trust the
        runner does not give."""
        facts = runner_facts(
            inp.receipt, self._signature_ok, may_skip_pre_read=self._may_skip_pre_read
        )
        if facts != inp.assumed:
            return SettleOutput(accepted=False, facts=facts, ledger=self._ledger.url)
        try:
            appended = await self._ledger.append(inp.receipt)
        except LedgerConflict as exc:
            # The same attempt with different content: retrying cannot change the ledger.
            raise ApplicationError(str(exc), type="LedgerConflict", non_retryable=True) from exc
        return SettleOutput(accepted=True, facts=facts, appended=appended, ledger=self._ledger.url)
