"""Tripwire (GOV-9): one per loop. Its stream is the ledger: on every wake-up, and at least
every ``stream.EVERY``, it reads the loop's settlements after its cursor (landed.loops.stream).
Every settled receipt of the loop's tasks is also signalled to it, which only wakes it sooner
(a signal is lost with a runner that dies while gathering it). A timer watches for silence, and
before silence trips the ledger is read once more; when a rule trips it queues the loop's one
repair task and reads that repair's verdict like any other. The decisions are
``landed.loops.tripwire``'s and ``landed.loops.stream``'s."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from temporalio import workflow
from temporalio.common import (
    RetryPolicy,
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from landed.loops.spec import LoopSpec, TripwireRules, repair_task
    from landed.loops.steps import LoopSteps
    from landed.loops.stream import EVERY, PAGES, open_stream, read_of, take
    from landed.loops.tripwire import (
        CatchUp,
        Note,
        TripRecord,
        TripwireInput,
        TripwireState,
        accept,
        after_repair,
        person_repair,
        rule_tripped,
        silence_deadline,
        trip,
        unseen,
    )
    from landed.task.names import (
        AGENT_TASK_WORKFLOW,
        LOOP_ATTRIBUTE,
        REPAIR_DONE_SIGNAL,
        SETTLED_SIGNAL,
        STATE_QUERY,
        STOP_SIGNAL,
        TRIPWIRE_WORKFLOW,
    )

from landed.workflows.errors import LOCAL_GAVE_UP
from landed.workflows.versions import (
    LEDGER_STREAM,
    REPAIR_HOLD_RECORDED,
    SILENCE_REREADS_LEDGER,
)

__all__ = ["Tripwire"]

_OWNER = SearchAttributeKey.for_keyword("LandedOwner")
_LOOP = SearchAttributeKey.for_keyword(LOOP_ATTRIBUTE)
_STEP = timedelta(seconds=30)
_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))
# The stream's read is tried once: a ledger that cannot be read now is read at the next wake-up.
_STREAM_RETRY = RetryPolicy(maximum_attempts=1)
# The read before a silence trip is bounded: the trip waits for it a few seconds at most.
_REREAD_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=4), maximum_attempts=3
)


@workflow.defn(name=TRIPWIRE_WORKFLOW)
class Tripwire:
    def __init__(self) -> None:
        self._pending: list[Note] = []
        self._people: list[str] = []
        self._stop = False
        self._state = TripwireState(loop="")
        self._stream = False
        self._behind = False  # the last wake-up's reads left a backlog: read on at once

    @workflow.signal(name=SETTLED_SIGNAL)
    def settled(self, notes: list[Note]) -> None:
        self._pending.extend(notes)

    @workflow.signal(name=REPAIR_DONE_SIGNAL)
    def repair_done(self, person: str) -> None:
        self._people.append(person)

    @workflow.signal(name=STOP_SIGNAL)
    def stop(self) -> None:
        self._stop = True

    @workflow.query(name=STATE_QUERY)
    def state(self) -> TripwireState:
        return self._state

    @workflow.run
    async def run(self, inp: TripwireInput) -> TripwireState:
        # Decided once, before any command: a run recorded before the ledger stream replays
        # without its reads and timer, and streams from its next run (continue-as-new) on.
        self._stream = workflow.patched(LEDGER_STREAM)
        state = inp.state or TripwireState(
            loop=inp.loop, armed_at=workflow.now(), declared=inp.spec is not None
        )
        self._state = state
        if inp.state is None:
            # Started (or started again after it stopped): what settled meanwhile comes first,
            # then the signals that arrived with the start; repeats are dropped by key.
            # Trips number on from the ledger's last one: a trip's event key and its repair's
            # task id are never those of a trip recorded before this tripwire started.
            last = await workflow.execute_local_activity_method(
                LoopSteps.last_trip,
                inp.loop,
                start_to_close_timeout=_STEP,
                retry_policy=_RETRY,
            )
            if last is not None:
                state.trips = [last]
            # What settled up to the last trip was judged by the tripwire that recorded it:
            # read again, the same not-done runs would trip a second time.
            caught = await workflow.execute_local_activity_method(
                LoopSteps.catch_up,
                CatchUp(loop=inp.loop, since=last.at if last is not None else None),
                start_to_close_timeout=_STEP,
                retry_policy=_RETRY,
            )
            self._pending[:0] = caught
            if self._stream:
                open_stream(state, caught, last.at if last is not None else None)
        if self._stream and state.cursor is None:
            # Carried on from a run before the stream: past what that run already took in.
            trip_at = state.last_trip.at if state.last_trip is not None else None
            open_stream(state, [], max((t for t in (state.armed_at, trip_at) if t), default=None))
        while not self._stop:
            await self._wait(inp)
            if self._stream:
                await self._read_stream()
            await self._step(inp.spec)
            info = workflow.info()
            busy = self._pending or self._people or self._behind
            if not busy and (
                info.is_continue_as_new_suggested()
                or info.get_current_history_length() > inp.history_limit
            ):
                workflow.continue_as_new(inp.model_copy(update={"state": state}))
        return state

    async def _wait(self, inp: TripwireInput) -> None:
        state = self._state
        silence = inp.spec.silence if inp.spec is not None else None
        deadlines = [d for d in (silence_deadline(state, silence), state.retry_at) if d]
        if self._stream:
            deadlines.append(workflow.now() + EVERY)
        timeout = (min(deadlines) - workflow.now()) if deadlines else None
        if self._behind or (timeout is not None and timeout <= timedelta(0)):
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await workflow.wait_condition(
                lambda: bool(self._pending or self._people or self._stop), timeout=timeout
            )

    async def _step(self, spec: LoopSpec | None) -> None:
        state, now = self._state, workflow.now()
        rules = spec.tripwire if spec is not None else TripwireRules()
        while self._pending:
            note = self._pending.pop(0)
            if note.task_id.startswith(f"repair-{state.loop}-"):
                # A repair's verdict: only the open repair's counts, and never as a loop run.
                if (
                    state.phase == "repairing"
                    and note.task_id == state.repair_task_id
                    and spec is not None
                    and spec.repair is not None
                    and accept(state, note, rules.window)
                ):
                    state.recent = [n for n in state.recent if n.key != note.key]
                    phase, last = after_repair(state, note, spec.repair, now), state.last_trip
                    # The ledger shows it held (the exporter's landed_repairs_held), not a
                    # repair still open. A tripwire that held one before this replays as it ran.
                    if phase == "held" and last and workflow.patched(REPAIR_HOLD_RECORDED):
                        await self._record(TripRecord(loop=state.loop, trip=last, held=True))
                continue
            if state.phase != "healthy" or not accept(state, note, rules.window):
                continue
            hit = rule_tripped(state, rules)
            if hit is not None:
                await self._trip(spec, *hit)
        if self._people:
            person = self._people.pop(0)
            await self._person(spec, person)
        silence = spec.silence if spec is not None else None
        due = silence_deadline(state, silence)
        if due is not None and now >= due and not await self._reread():
            await self._trip(spec, f"no verified settlement in {silence}", [])
        if state.phase == "repairing" and state.retry_at is not None and now >= state.retry_at:
            state.retry_at = None
            await self._start_repair(spec, None)

    async def _read_stream(self) -> None:
        """The loop's settlements after the cursor, queued to be judged like signalled ones
        (a repeat of a signalled one is dropped by its task id and attempt). A ledger that
        cannot be read now is read at the next wake-up: the cursor stays where it was."""
        state, self._behind = self._state, False
        for _ in range(PAGES):
            try:
                page = await workflow.execute_local_activity_method(
                    LoopSteps.read_after,
                    read_of(state),
                    start_to_close_timeout=_STEP,
                    retry_policy=_STREAM_RETRY,
                )
            except LOCAL_GAVE_UP as exc:
                workflow.logger.warning("loop %s: stream not read: %s", state.loop, exc)
                return
            self._pending.extend(n for n in page.notes if n.key not in state.seen)
            take(state, page)
            if not page.full:
                return
        self._behind = True

    async def _reread(self) -> bool:
        """Before silence trips: the loop's runs the ledger holds that no signal brought (a
        runner that died with its signals still gathered, a signal still on its way). True when
        there are some, to judge first: silence trips only once the ledger agrees."""
        # Histories that tripped on silence before this read was added replay without it.
        if not workflow.patched(SILENCE_REREADS_LEDGER):
            return False
        state = self._state
        try:
            notes = await workflow.execute_local_activity_method(
                LoopSteps.catch_up,
                CatchUp(loop=state.loop, since=state.armed_at),
                start_to_close_timeout=_STEP,
                retry_policy=_REREAD_RETRY,
            )
        except LOCAL_GAVE_UP as exc:
            # A ledger that cannot be read cannot say the loop ran: silence trips (fail closed).
            workflow.logger.warning("loop %s: ledger not read before silence: %s", state.loop, exc)
            return False
        fresh = unseen(state, notes)
        self._pending.extend(fresh)
        return bool(fresh)

    async def _trip(self, spec: LoopSpec | None, rule: str, receipts: list[str]) -> None:
        repair = spec.repair if spec is not None else None
        own_act = repair is not None and repair.act is not None
        record = trip(self._state, rule, receipts, workflow.now(), repair=own_act)
        if own_act:
            await self._start_repair(spec, None)
        await self._record(TripRecord(loop=self._state.loop, trip=record))

    async def _record(self, record: TripRecord) -> None:
        """Append the trip (or its hold) to the ledger as an event."""
        try:
            # Keyed by loop and trip number: a retry, a replay or a new runner after a crash
            # between the trip and this write stores the event once.
            await workflow.execute_local_activity_method(
                LoopSteps.record_trip,
                record,
                start_to_close_timeout=_STEP,
                retry_policy=_RETRY,
            )
        except LOCAL_GAVE_UP as exc:
            # Only a different event stored under this key ends here (the ledger keeps the
            # first); the trip stands on the query and its repair is already queued.
            workflow.logger.error("trip event %s not recorded: %s", record, exc)

    async def _person(self, spec: LoopSpec | None, person: str) -> None:
        state = self._state
        if spec is None or spec.repair is None:
            # Nothing of its own to read back: the loop's next runs are the read-back.
            if state.phase == "held":
                state.phase, state.armed_at, state.recent = "healthy", workflow.now(), []
            return
        if person_repair(state) is not None:
            await self._start_repair(spec, person)

    async def _start_repair(self, spec: LoopSpec | None, person: str | None) -> None:
        """Start the repair task as a child the tripwire abandons. Its id (also its workflow
        id: the verifier reads only for the workflow of the task) is derived from the loop,
        the trip and the attempt, and the start is a command in this workflow's history: a
        replay, a runner killed mid-trip or a second trip never starts a second repair, and a
        closed repair's id is never run again. Its verdict comes back by the settle signal."""
        state = self._state
        assert spec is not None and spec.repair is not None and state.repair_task_id
        task = repair_task(state.loop, spec.repair, state.repair_task_id, person)
        with contextlib.suppress(WorkflowAlreadyStartedError):
            await workflow.start_child_workflow(
                AGENT_TASK_WORKFLOW,
                task,
                id=task.task_id,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(_OWNER, task.owner),
                        SearchAttributePair(_LOOP, state.loop),
                    ]
                ),
            )
