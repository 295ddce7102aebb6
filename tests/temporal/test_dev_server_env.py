"""The embedded Temporal server is started without landed's settings: it needs none of them,
and they hold credentials (a source's token, the actor's credentials, the ledger URL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from landed.dev.server import DevServer

CANARY = "canary-7f3b2e-token"


def test_the_dev_server_never_holds_landed_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDED_SOURCES__ORDERS_DB__TOKEN", CANARY)
    monkeypatch.setenv("LANDED_ACTOR_CREDENTIALS", f'{{"orders-db": "{CANARY}"}}')
    monkeypatch.setenv("LANDED_LEDGER_URL", f"postgresql://runner:{CANARY}@127.0.0.1/ledger")
    monkeypatch.setenv("TEMPORAL_API_KEY", CANARY)
    server = DevServer(headless=True).start()
    try:
        assert server.proc is not None
        environ = Path(f"/proc/{server.proc.pid}/environ").read_bytes()
    finally:
        server.stop()
    assert CANARY.encode() not in environ
    assert b"LANDED_" not in environ
