"""`landed exporter` as a user runs it: a free port printed, metrics served, SIGTERM stops it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from helpers.scorecard import settled

from landed.ledger.factory import open_ledger

pytestmark = pytest.mark.slow


async def test_the_command_prints_its_free_port_and_serves_the_ledger(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    async with await open_ledger(url) as ledger:
        await ledger.append(settled("cli-1", owner="alice"))
    landed = Path(sys.executable).with_name("landed")
    proc = subprocess.Popen(
        [str(landed), "exporter", "--ledger", url, "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())  # bounded by the test's timeout
        assert ready["event"] == "ready" and ready["rows"] == 1 and ready["ledger_up"]
        assert ready["url"].startswith("http://127.0.0.1:") and ready["url"].endswith("/")
        text = httpx.get(ready["metrics"], timeout=30).text
        assert 'landed_done_proven_total{loop="",owner="alice"} 1.0' in text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


def test_a_bad_setting_is_named() -> None:
    landed = Path(sys.executable).with_name("landed")
    done = subprocess.run(
        [str(landed), "exporter", "--port", "70000"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3
    assert "port" in done.stderr and "65535" in done.stderr
    done = subprocess.run(
        [str(landed), "exporter", "--ledger", "mysql://db/x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert "unknown ledger URL scheme 'mysql'" in done.stderr


def _ready_then_stop(*args: str) -> dict[str, object]:
    """Start `landed exporter ... --json`, read its ready line, stop it with SIGTERM."""
    landed = Path(sys.executable).with_name("landed")
    proc = subprocess.Popen(
        [str(landed), "exporter", "--port", "0", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready: dict[str, object] = json.loads(proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return ready


async def test_a_restart_resumes_from_the_state_beside_the_ledger(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    async with await open_ledger(url) as ledger:
        await ledger.append(settled("cli-1", owner="alice"))
    first = _ready_then_stop("--ledger", url)
    beside = tmp_path / "ledger.db.exporter-state.json"
    assert first["resumed"] is False and first["state"] == str(beside)
    assert beside.exists()  # saved at the clean stop
    again = _ready_then_stop("--ledger", url)
    assert again["resumed"] is True and again["rows"] == 1
    beside.unlink()
    cold = _ready_then_stop("--ledger", url, "--no-state")
    assert cold["resumed"] is False and cold["state"] is None and not beside.exists()
    elsewhere = tmp_path / "kept" / "state.json"
    assert _ready_then_stop("--ledger", url, "--state", str(elsewhere))["resumed"] is False
    assert _ready_then_stop("--ledger", url, "--state", str(elsewhere))["resumed"] is True
