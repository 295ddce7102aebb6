"""GOV-4: which time cap a task runs under.

Precedence: the task's own ``time_cap`` when it names one; else the deployment's
(``LANDED_RUNNER_TIME_CAP``, carried in the runner's routing); else 30 minutes.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from landed.receipts.model import Receipt
from landed.task.spec import TaskSpec

__all__ = ["effective_time_cap", "past_time_cap", "time_capped"]


def effective_time_cap(spec: TaskSpec, deployment: timedelta | None) -> timedelta:
    """The cap the task runs under (see the module's precedence)."""
    if spec.deployment_time_cap and deployment is not None:
        return deployment
    return spec.time_cap


def past_time_cap(
    now: datetime, deadline: datetime, act_error: str | None, verdict: str | None
) -> bool:
    """Whether the task ran into its cap: it is past it, and either its act ended in an error
    (cut off by the cap, or no attempt could start) or its reads, cut short by the cap, left
    it not done. A task verified in time keeps its verdict though its settling ran past."""
    if now < deadline:
        return False
    return act_error is not None or verdict not in ("verified", "reconciled")


def time_capped(receipt: Receipt, cap: timedelta, act_error: str | None) -> Receipt:
    """GOV-4: a task whose act attempts ended at its time cap settles ``failed``, saying
    "time cap", whatever its read-back found: it stopped acting, and the receipt keeps the
    read-back of what an act in flight may have written."""
    why = f"GOV-4: time cap {cap} reached: the task stopped acting ({act_error or 'no report'})"
    landed = receipt.landed
    if landed is not None:
        findings = [*getattr(landed, "findings", []), why]
        update = {"rung": "failed", "meets_bar": False, "findings": findings, "time_cap": True}
        landed = landed.model_copy(update=update)
    return receipt.model_copy(update={"verdict": "failed", "landed": landed})
