"""The Python client in plain words: ``run(..., raise_if_not_done=True)`` raises ``NotDone``
with the receipt, and a client that cannot connect raises landed's own error naming the fix.
Nothing here starts a Temporal server."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from helpers.receipts import settled_receipt

import landed

TASK = {
    "task_id": "t-plain",
    "owner": "agent-a",
    "outcome": "3 orders are in the orders table",
    "act": {"name": "shop.add_orders", "input": {}},
}


class _Settled:
    """A task handle whose task has settled with ``receipt``."""

    def __init__(self, receipt: landed.Receipt) -> None:
        self.receipt = receipt

    async def result(self) -> landed.Receipt:
        return self.receipt


def _receipt(verdict: str, result: str, value: int) -> landed.Receipt:
    return settled_receipt("t-plain", verdict, result, value)


def _client(monkeypatch: pytest.MonkeyPatch, receipt: landed.Receipt) -> landed.Client:
    client = landed.Client(object(), check_roles=False)  # type: ignore[arg-type]

    async def start(task: Any) -> _Settled:
        return _Settled(receipt)

    monkeypatch.setattr(client, "start", start)
    return client


async def test_run_raises_not_done_carrying_the_receipt(monkeypatch: pytest.MonkeyPatch) -> None:
    receipt = _receipt("planned", "mismatch", 2)
    client = _client(monkeypatch, receipt)
    with pytest.raises(landed.NotDone) as caught:
        await client.run(TASK, raise_if_not_done=True)
    assert caught.value.receipt is receipt
    assert str(caught.value) == (
        "task 't-plain' is NOT DONE (verdict planned): the read-back of 'add 3 orders' found 2 "
        "where count(3) was expected (mismatch)."
    )


async def test_run_returns_a_receipt_that_is_not_done_unless_asked_to_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    receipt = _receipt("planned", "mismatch", 2)
    assert await _client(monkeypatch, receipt).run(TASK) is receipt
    assert not receipt.done


async def test_run_returns_a_done_receipt_when_asked_to_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    receipt = _receipt("verified", "pass", 3)
    assert await _client(monkeypatch, receipt).run(TASK, raise_if_not_done=True) is receipt


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_client_that_cannot_connect_raises_landeds_error_naming_the_fix() -> None:
    address = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(landed.TemporalUnreachable) as caught:
        await landed.Client.connect(address)
    message = str(caught.value)
    assert message.startswith(f"cannot reach Temporal at {address} (")
    assert "start it with `landed dev`" in message and "TEMPORAL_ADDRESS" in message
    # Callers that caught the SDK's RuntimeError still catch it.
    assert isinstance(caught.value, RuntimeError)
