"""The act activity: runs the user's registered act on the actor, under the actor's identity."""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from temporalio import activity
from temporalio.exceptions import ApplicationError

from landed.governance.harness import HARNESS_UNAVAILABLE, HarnessUnavailable
from landed.task.acts import ActContext, ActFn, irreversible_kind
from landed.task.checkable import UNKNOWN_ACT, act_problem
from landed.task.credentials import Credentials
from landed.task.messages import ActInput, ActReport
from landed.task.names import ACT_ACTIVITY, APPROVAL_REQUIRED, CLAIM_OF_ANOTHER_RUN
from landed.telemetry.logs import task_event
from landed.telemetry.spans import act_span, note_act
from landed.util.redact import Redactor

from ._heartbeat import heartbeating
from ._threads import to_the_end

__all__ = ["DEFAULT_ACT_THREADS", "ActActivities"]

#: The actor's default activity concurrency (ActorSettings.max_concurrent_activities).
DEFAULT_ACT_THREADS = 200


def _no_beat(*details: object) -> None:
    return None


class ActActivities:
    """The acts this actor may run and the actor's own credentials; nothing else."""

    def __init__(
        self,
        acts: Mapping[str, ActFn],
        credentials: Mapping[str, str],
        identity: str,
        *,
        threads: int = DEFAULT_ACT_THREADS,
    ):
        self._acts = dict(acts)
        self._credentials = Credentials(credentials)
        self._identity = identity
        # Sync acts run here, one thread per act in flight up to the actor's activity
        # concurrency (threads start only when needed), never queued behind asyncio's small
        # default pool where a waiting attempt uses up its time without running.
        self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="landed-act")
        # An act's error text travels to the workflow, its receipt and the append-only ledger.
        self._redact = Redactor(self._credentials.values())

    def _redacted(self, details: Sequence[object]) -> tuple[object, ...]:
        """An act error's details with the actor's credentials taken out of every part (keys,
        bytes and objects included, through their JSON text); details that cannot be written
        as JSON (a cycle) are dropped rather than let fail the act's own error."""
        out: list[object] = []
        for detail in details:
            try:
                text = self._redact(json.dumps(detail, default=str))
            except (TypeError, ValueError, RecursionError):
                continue
            try:
                out.append(json.loads(text))
            except ValueError:
                out.append(text)
        return tuple(out)

    @staticmethod
    def _log_kept(inp: ActInput, exc: BaseException) -> None:
        activity.logger.warning(
            "act %r of task %s attempt %d raised; the workflow gets its redacted text",
            inp.act.name,
            inp.task_id,
            inp.attempt,
            exc_info=exc,
        )

    def _beat(self, *details: object) -> None:
        # An act's own beat keeps this actor's name first, where the workflow looks for it.
        activity.heartbeat(self._identity, *details)

    @activity.defn(name=ACT_ACTIVITY)
    async def act(self, inp: ActInput) -> ActReport:
        """Run one act attempt. An exception here is an unknown write: the workflow reads back
        before deciding anything (DOD-10). An unknown act name is permanent (nothing ran)."""
        run = activity.info().workflow_run_id
        if inp.claimed_for is not None and inp.claimed_for != run:
            # A run reset from another replays the other's claim and may schedule the act anew
            # on it (the claim's marker and the act fell in different workflow tasks, and the
            # reset kept only the first). That run was about to act, so this one must not.
            raise ApplicationError(
                f"act attempt {inp.attempt} of task {inp.task_id!r} was scheduled under the "
                f"ledger claim of run {inp.claimed_for}, not of run {run} that asked for it; "
                "nothing was run (the workflow reads back what the other run may have written)",
                # The run the claim was recorded for: the one the workflow names as having been
                # about to act.
                inp.claimed_for,
                type=CLAIM_OF_ANOTHER_RUN,
                non_retryable=True,
            )
        fn = self._acts.get(inp.act.name)
        if fn is None:
            unknown = act_problem(inp.act.name, self._acts) or "unknown act"
            raise ApplicationError(unknown, type=UNKNOWN_ACT, non_retryable=True)
        kind = irreversible_kind(fn)
        if kind is not None and not inp.approved_by:
            # GOV-5 at the last door: whatever the task declared, this act does not run unapproved.
            raise ApplicationError(
                f"act {inp.act.name!r} is registered irreversible ({kind}) and task "
                f"{inp.task_id!r} was not approved; nothing was run: declare irreversible: "
                f"{kind} in the task so it waits for a person's approval",
                type=APPROVAL_REQUIRED,
                non_retryable=True,
            )
        ctx = ActContext(
            task_id=inp.task_id,
            attempt=inp.attempt,
            idempotency_key=inp.idempotency_key,
            identity=self._identity,
            credentials=self._credentials,
            # A sync act runs in a thread where the activity context is absent; the background
            # beat below keeps it alive, so its heartbeat is a no-op.
            heartbeat=self._beat if inspect.iscoroutinefunction(fn) else _no_beat,
        )
        with act_span(inp.owner, inp.act.name, inp.task_id, inp.attempt) as span:
            try:
                report = await self._run(fn, ctx, inp)
            except ApplicationError as exc:
                # An unknown write: the workflow reads back before deciding (its type only here).
                task_event(
                    "acted", role="actor", task_id=inp.task_id, attempt=inp.attempt, error=exc.type
                )
                raise
            note_act(span, report.claimed_status, report.cost)
            task_event(
                "acted",
                role="actor",
                task_id=inp.task_id,
                attempt=inp.attempt,
                claimed_status=report.claimed_status,
            )
        return report

    async def _run(self, fn: ActFn, ctx: ActContext, inp: ActInput) -> ActReport:
        # Each beat names this actor first: an attempt that times out reports no worker
        # identity, and the workflow still has to know whose reading would be self-grading.
        try:
            async with heartbeating(self._identity):
                if inspect.iscoroutinefunction(fn):
                    result = await fn(dict(inp.act.input), ctx)
                else:
                    result = await to_the_end(fn, dict(inp.act.input), ctx, executor=self._threads)
                    if inspect.isawaitable(result):
                        result = await result
        except ApplicationError as exc:
            # The act's own error kind, retry choice and category stand; its text and details
            # are redacted (details land in Temporal's history with the failure).
            self._log_kept(inp, exc)
            raise ApplicationError(
                self._redact(exc.message),
                *self._redacted(exc.details),
                type=exc.type,
                non_retryable=exc.non_retryable,
                next_retry_delay=exc.next_retry_delay,
                category=exc.category,
            ) from None
        except HarnessUnavailable as exc:
            # The harness could not work (GOV-10): the workflow releases the task to another
            # harness instead of reading this as the task's own failure.
            self._log_kept(inp, exc)
            raise ApplicationError(
                self._redact(str(exc)) or "the harness is unavailable",
                type=HARNESS_UNAVAILABLE,
                non_retryable=True,
            ) from None
        except Exception as exc:
            # The traceback stays in the actor's own log: its frames and chained causes can
            # quote a credential (a URL with its token) that the redactor never sees whole.
            self._log_kept(inp, exc)
            raise ApplicationError(self._redact(str(exc)), type=type(exc).__name__) from None
        if not isinstance(result, ActReport):
            raise ApplicationError(
                f"act {inp.act.name!r} returned {type(result).__name__}, not an ActReport; "
                f"return landed.ActReport(claimed_status=..., report=...)",
                type="BadActReport",
                non_retryable=True,
            )
        # The report reaches the receipt and the ledger: an act that echoes a credential (a
        # webhook URL with its token in the path, say) must not put it there.
        return result.model_copy(
            update={
                "actor": self._identity,
                "report": self._redact(result.report) if result.report else result.report,
            }
        )
