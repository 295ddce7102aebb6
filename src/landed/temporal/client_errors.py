"""What ``landed.Client`` raises, each naming what happened and the fix."""

from __future__ import annotations

from landed.receipts.model import Receipt

__all__ = [
    "NamespaceNotReady",
    "NotDone",
    "RunnerNotAnswering",
    "TaskIdReused",
    "TaskNotSettled",
    "TemporalUnreachable",
    "not_settled",
    "unreachable",
]


class TaskIdReused(ValueError):
    """The task id belongs to another task (another spec): it cannot start, and the other
    task's receipt is not this one's. Give the new task its own task_id."""


class NamespaceNotReady(RuntimeError):
    """The namespace lacks landed's search attributes (no runner has registered them)."""


class NotDone(RuntimeError):
    """The task settled, and it is not done (``client.run(..., raise_if_not_done=True)``).

    ``receipt`` is the settled receipt; the message says why in one sentence."""

    def __init__(self, receipt: Receipt) -> None:
        self.receipt = receipt
        super().__init__(
            f"task {receipt.task_id!r} is NOT DONE (verdict {receipt.verdict}): {receipt.why}"
        )


class TemporalUnreachable(ConnectionError, RuntimeError):
    """``Client.connect`` could not reach Temporal; the message names the address and the fix.

    Also a RuntimeError, which the SDK raised here before, so existing handlers still catch it."""


def unreachable(target: str, exc: BaseException) -> TemporalUnreachable:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return TemporalUnreachable(
        f"cannot reach Temporal at {target} ({first[:300]}); start it with `landed dev` (it "
        "prints the address), or set TEMPORAL_ADDRESS (or pass address=) to your server's "
        "host:port"
    )


class TaskNotSettled(RuntimeError):
    """The task's workflow closed without settling a receipt (failed, terminated, timed
    out): there is no receipt to hand back, and a graded one must not pass for settled."""


def not_settled(task_id: str, how: str) -> str:
    return (
        f"task {task_id!r} ended {how} without a settled receipt; read why with `temporal "
        f"workflow show --workflow-id {task_id}` and the runner's log; to run it again, fix the "
        f"cause and submit it under a new task_id (this id stays taken by the closed run, and "
        f"once Temporal forgets that run, a new run of it reads back and settles without acting)"
    )


class RunnerNotAnswering(RuntimeError):
    """The task is running, but no runner answered the query in time (stopped or stalled)."""
