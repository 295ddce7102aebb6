"""The ledger's witness on a real dev server: it holds only heads the runner's head key signed,
never one below the latest it holds nor one whose link differs at a position it holds; each
refusal reaches the sender; its runs replay."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import pytest
from helpers.histories import HISTORIES, keep
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer, Worker

from landed.ledger.chain import GENESIS, ChainHead, HeadSigner, link
from landed.ledger.witness import (
    WITNESS_SIGNAL,
    WITNESS_UPDATE,
    WITNESS_WORKFLOW,
    WitnessHead,
    WitnessState,
    witness_id,
)
from landed.signing import KeyPair
from landed.temporal.plugin import connect, landed_plugin, strict_workflow_runner
from landed.temporal.witness import WitnessSender, read_witness
from landed.workflows.witness import Witness


def _head(key: KeyPair, pos: int, salt: str = "") -> WitnessHead:
    # The head at ``pos`` of a chain; another ``salt``: another chain, another link there.
    prev = ChainHead(pos - 1, pos - 1, link(pos - 1, pos - 1, salt, GENESIS))
    return WitnessHead.of(HeadSigner(key).sign(prev.next(pos, "ab" * 32)))


async def _send(client: Client, wid: str, queue: str, key: KeyPair, head: WitnessHead) -> int:
    start: WithStartWorkflowOperation[object, None] = WithStartWorkflowOperation(
        WITNESS_WORKFLOW,
        WitnessState(public_pem=key.public_pem().decode(), keep=3, per_run=4),
        id=wid,
        task_queue=queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    got = await client.execute_update_with_start_workflow(
        WITNESS_UPDATE, head, start_workflow_operation=start, result_type=int
    )
    return int(got)


async def _first_run(client: Client, wid: str) -> str:
    runs = [w async for w in client.list_workflows(f"WorkflowId = '{wid}'")]
    return min(runs, key=lambda w: w.start_time).run_id


async def _refused(client: Client, wid: str, queue: str, key: KeyPair, head: WitnessHead) -> str:
    with pytest.raises(WorkflowUpdateFailedError) as caught:
        await _send(client, wid, queue, key, head)
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "HeadRefused"
    return str(cause)


async def test_the_witness_holds_only_the_runners_heads_in_order(temporal_dev: str) -> None:
    key, other = KeyPair.generate(), KeyPair.generate()
    tag = uuid.uuid4().hex[:8]
    queue, wid = f"witness-{tag}", f"{witness_id(key.key_id)}-{tag}"
    client = await connect(identity=f"runner@test-{tag}", address=temporal_dev)
    async with Worker(
        client,
        task_queue=queue,
        workflows=[Witness],
        max_cached_workflows=0,
        workflow_runner=strict_workflow_runner(),
    ):
        assert await _send(client, wid, queue, key, _head(key, 3)) == 3
        # Another key's head, even at a new position, is refused: the actor holds no head key.
        assert "accepts only the runner's head key" in await _refused(
            client, wid, queue, key, _head(other, 9)
        )
        # A head below the latest held: what a runner on a cut-back ledger would sign next.
        assert "below the latest witnessed head" in await _refused(
            client, wid, queue, key, _head(key, 2)
        )
        # The same position with another link: a ledger cut back and written anew.
        assert "the chain was rewritten" in await _refused(
            client, wid, queue, key, _head(key, 3, salt="x")
        )
        # A forged signature under the runner's key id.
        forged = _head(key, 10).model_copy(update={"signature": _head(other, 10).signature})
        assert "does not verify" in await _refused(client, wid, queue, key, forged)
        for pos in (3, 5, 6, 8):  # a resend of 3 is accepted and held once
            assert await _send(client, wid, queue, key, _head(key, pos)) == pos
        state = await read_witness(client, wid)
        assert state is not None and [h.pos for h in state.heads] == [5, 6, 8]  # keep=3
        # Four heads a run: the witness continued as new, carrying its heads and its start.
        first = client.get_workflow_handle(wid, run_id=await _first_run(client, wid))
        assert (await first.describe()).status == WorkflowExecutionStatus.CONTINUED_AS_NEW
        latest = await client.get_workflow_handle(wid).describe()
        assert state.since is not None and state.since < latest.start_time
        history = await client.get_workflow_handle(wid).fetch_history()
        first_history = await first.fetch_history()
    replayer = Replayer(
        workflows=[Witness], plugins=[landed_plugin()], workflow_runner=strict_workflow_runner()
    )
    await replayer.replay_workflow(history)
    await replayer.replay_workflow(first_history)
    keep(first_history, HISTORIES / "witness" / "continued_as_new.json")


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    for _ in range(200):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"not within 20 s: {what}")


async def test_the_runners_sender_delivers_heads_and_a_refusal_reaches_it(
    temporal_dev: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = KeyPair.generate()
    tag = uuid.uuid4().hex[:8]
    queue, wid = f"witness-{tag}", f"{witness_id(key.key_id)}-{tag}"
    client = await connect(identity=f"runner@test-{tag}", address=temporal_dev)
    pem = key.public_pem().decode()

    async def latest() -> WitnessState:
        state = await read_witness(client, wid)
        assert state is not None
        return state

    async with Worker(
        client,
        task_queue=queue,
        workflows=[Witness],
        max_cached_workflows=0,
        workflow_runner=strict_workflow_runner(),
    ):
        sender = WitnessSender(client, wid, queue, pem, retry_s=0.2)
        old = _head(key, 1).signed()
        for head in (old, _head(key, 2).signed(), _head(key, 4).signed()):
            sender.offer(head)
        await _until(lambda: _sent(sender), "the heads sent")
        await sender.close()
        await _until(lambda: _holds(latest, 4), "the witness holds head 4")
        # A runner on a ledger cut back signs a lower head: the Update's refusal reaches it.
        sender = WitnessSender(client, wid, queue, pem, retry_s=0.2)
        sender.offer(_head(key, 3).signed())
        await _until(lambda: _logged(caplog, "refused head 3"), "the refusal logged")
        # An old head sent again by whoever reads the witness is no news: nothing is kept.
        await client.get_workflow_handle(wid).signal(WITNESS_SIGNAL, WitnessHead.of(old))
        # The head signed as a runner stops goes as a signal: the refusal is kept.
        sender.offer(_head(key, 2).signed())
        await sender.close()
        await _until(lambda: _refused_kept(latest), "the signalled refusal kept")
        assert (await latest()).heads[-1].pos == 4
        assert len((await latest()).refused) == 1
    assert "below the latest witnessed head" in caplog.text


async def _sent(sender: WitnessSender) -> bool:
    return sender.sent >= 1


async def _holds(latest: Callable[[], Awaitable[WitnessState | None]], pos: int) -> bool:
    state = await latest()
    return state is not None and bool(state.heads) and state.heads[-1].pos == pos


async def _logged(caplog: pytest.LogCaptureFixture, text: str) -> bool:
    return text in caplog.text


async def _refused_kept(latest: Callable[[], Awaitable[WitnessState]]) -> bool:
    return any("position 2 is below" in r for r in (await latest()).refused)


async def test_a_runner_stopping_mid_send_stops_and_signals_its_last_head(
    temporal_dev: str,
) -> None:
    """No worker accepts the Update (the runner's own worker already stopped): close neither
    hangs on the call in flight nor loses the head; the witness applies it when a runner
    polls again."""
    key = KeyPair.generate()
    tag = uuid.uuid4().hex[:8]
    queue, wid = f"witness-{tag}", f"{witness_id(key.key_id)}-{tag}"
    client = await connect(identity=f"runner@test-{tag}", address=temporal_dev)
    sender = WitnessSender(client, wid, queue, key.public_pem().decode(), retry_s=0.2)
    sender.offer(_head(key, 7).signed())
    await asyncio.sleep(1.0)  # the Update-with-start waits for a worker
    await asyncio.wait_for(sender.close(within=5), timeout=10)
    assert sender.sent == 1  # the signal, recorded by Temporal with no worker up
    async with Worker(
        client,
        task_queue=queue,
        workflows=[Witness],
        max_cached_workflows=0,
        workflow_runner=strict_workflow_runner(),
    ):
        await _until(lambda: _holds(lambda: read_witness(client, wid), 7), "the head held")
