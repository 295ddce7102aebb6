"""`landed dev` and `landed demo` as processes: the embedded server's ports and settings, one
stack per directory, Ctrl-C and SIGKILL leaving nothing running, and the demo's verdicts."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from helpers.wait import until_sync

from landed.cli.dev import _or_free
from landed.dev.server import free_port
from landed.dev.stack import DevStack

# Real processes on two shared cores: give each test room beyond the suite's default timeout.
pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow
async def test_landed_dev_ignores_the_users_temporal_settings_and_holds_its_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from landed.dev.server import DevError

    # The user's own cluster settings (an API key and a profile with TLS) must not reach the
    # embedded server or its health check, which would then speak TLS to it.
    profile = tmp_path / "temporal.toml"
    profile.write_text('[profile.default]\naddress = "x.tmprl.cloud:7233"\napi_key = "k-123"\n')
    monkeypatch.setenv("TEMPORAL_API_KEY", "k-123")
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(profile))
    monkeypatch.setenv("TEMPORAL_TLS", "true")
    home = tmp_path / "home"
    first = DevStack(home=home, headless=True, in_memory=True)
    await first.start(timeout=90)
    try:
        # Every address is printed, the server's own metrics too, and answers on loopback.
        metrics = first.addresses()["temporal_metrics"]
        assert metrics.startswith("http://127.0.0.1:")
        assert "# TYPE" in httpx.get(metrics, timeout=10).text
        second = DevStack(home=home, headless=True, in_memory=True)
        with pytest.raises(DevError, match=r"another landed dev .*pid"):
            await second.start()
        assert second.server is None  # refused before anything started
    finally:
        first.stop()
    # Released when the first stopped; a stack whose roles would share a queue stops itself.
    clash = DevStack(
        home=home,
        headless=True,
        in_memory=True,
        env={"actor": {"LANDED_ACTOR_TASK_QUEUE": "landed-verifier"}},
    )
    with pytest.raises(DevError, match="would share the task queue 'landed-verifier'"):
        await clash.start()
    assert not clash.roles
    # So does one whose verifier would run under the actor's identity (DOD-2).
    same = DevStack(
        home=home,
        headless=True,
        in_memory=True,
        env={
            "actor": {"LANDED_ACTOR_IDENTITY": "agent-bot"},
            "verifier": {"LANDED_VERIFIER_IDENTITY": "Agent-Bot"},
        },
    )
    with pytest.raises(DevError, match="verifier and the actor would both run as 'Agent-Bot'"):
        await same.start()
    assert not same.roles


def test_a_port_another_process_serves_is_refused_with_the_servers_reason(
    tmp_path: Path,
) -> None:
    """Something else listens on the frontend port (a stack started at the same moment bound
    it first): answering on it is not enough, the listener must be the server just started."""
    from landed.dev.server import DevError, DevServer

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        server = DevServer(port=port, headless=True, log_file=tmp_path / "temporal.log")
        with pytest.raises(DevError) as refused:
            server.start()
    said = str(refused.value)
    assert f"127.0.0.1:{port}" in said and "address already in use" in said, said
    assert server.proc is not None and server.proc.poll() is not None  # stopped, not left


@pytest.mark.slow
def test_a_port_picked_for_the_server_and_lost_is_picked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A free port can be taken between picking and binding it (the server picks its internal
    services' ports the same way): a port nobody named that is lost is picked again."""
    import landed.dev.server as dev

    real = dev.free_port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = [held.getsockname()[1]]
        monkeypatch.setattr(
            dev, "free_port", lambda ip="127.0.0.1": taken.pop() if taken else real(ip)
        )
        server = dev.DevServer(headless=True, log_file=tmp_path / "temporal.log").start()
        try:
            assert server.port != held.getsockname()[1] and server.proc is not None
            assert server.proc.poll() is None
        finally:
            server.stop()


def test_the_dev_server_asks_nothing_of_the_internet() -> None:
    """No version check at start (a DNS query for temporal.io) and no newsfeed in the Web UI."""
    from landed.dev.server import DevServer

    argv = DevServer(port=1, ui_port=2, metrics_port=3).argv()
    assert "frontend.enableServerVersionCheck=false" in argv
    assert "--ui-disable-news-fetch" in argv


@pytest.mark.slow
def test_ctrl_c_while_landed_dev_starts_stops_it_there(tmp_path: Path) -> None:
    """The actor is still importing its acts (a slow module) when Ctrl-C comes: `landed dev`
    stops at once with exit 0, not after the ready timeout, and leaves nothing running."""
    (tmp_path / "slow_acts.py").write_text("import time\ntime.sleep(120)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    env["LANDED_ACTOR_ACTS"] = "slow_acts"
    home = tmp_path / "dev"
    dev = subprocess.Popen(
        [sys.executable, "-m", "landed", "dev", "--dir", str(home), "--headless", "--port", "0"],
        env=env,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        # the server and the three roles have started
        until_sync("four children", lambda: len(_children(dev.pid)) >= 4, timeout=60, every=0.1)
        started = _children(dev.pid)
        assert len(started) == 4, started
        time.sleep(1.0)  # the actor is in its import, the others are ready
        asked = time.monotonic()
        dev.send_signal(signal.SIGINT)
        _, err = dev.communicate(timeout=45)
        took = time.monotonic() - asked
    finally:
        if dev.poll() is None:
            dev.kill()
            dev.communicate(timeout=10)
    assert dev.returncode == 0, err
    assert "stopped before it was ready" in err
    assert took < 20, took  # the 60 s ready timeout was not waited out
    assert [p for p in started if _alive(p)] == []


def test_landed_dev_takes_temporals_ports_or_free_ones(capsys: pytest.CaptureFixture[str]) -> None:
    """`landed dev` asks for 7233 and 8233 so `landed submit` and `temporal` find it unset; a
    port something else holds falls back to a free one, and says so."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        assert _or_free(taken, "Temporal frontend") == 0
    assert f"Temporal frontend port {taken} is taken" in capsys.readouterr().err
    free = free_port("127.0.0.1")
    assert _or_free(free, "Web UI") == free
    assert _or_free(0, "Web UI") == 0
    # A connection of the last run waiting in TIME_WAIT does not hold the port: the server,
    # which sets SO_REUSEADDR as this listener does (Go's default), could bind it again.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):
            conn, _ = listener.accept()
            conn.close()  # the server side closes first: its end waits in TIME_WAIT
    assert _or_free(port, "Web UI") == port


def _pids_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue  # ended while we looked
    return found


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has stopped; only its exit status is left to collect


@pytest.mark.slow
def test_a_killed_landed_dev_leaves_no_process_behind(tmp_path: Path) -> None:
    """SIGKILL runs no cleanup in `landed dev`; its server and its three roles stop anyway (the
    kernel signals each when the process that started it dies), so none holds the SQLite file
    beside the next stack."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    home = tmp_path / "dev"
    dev = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "landed",
            "dev",
            "--dir",
            str(home),
            "--headless",
            "--json",
            "--port",
            "0",
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    roles: list[int] = []
    server: list[int] = []
    left: list[int] = []
    try:
        assert dev.stdout is not None
        ready = json.loads(dev.stdout.readline())
        roles = [int(w["pid"]) for w in ready["workers"].values()]
        server = _pids_mentioning(str(home / "temporal.db"))
        assert len(roles) == 3 and len(server) == 1, (roles, server)
        dev.kill()
        dev.wait(timeout=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p) for p in [*roles, *server]):
            time.sleep(0.2)
        left = [p for p in [*roles, *server] if _alive(p)]
    finally:
        if dev.poll() is None:
            dev.kill()
            dev.wait(timeout=10)
        if dev.stdout is not None:
            dev.stdout.close()
    for pid in [*roles, *server, *_pids_mentioning(str(home))]:  # none left, even on failure
        if _alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert left == [], f"still running after landed dev was killed: {left}"


@pytest.mark.slow
def test_landed_demo_gets_six_expected_verdicts(tmp_path: Path) -> None:
    """`landed demo` end to end: dev server, three role processes, six real workflows, the
    approval, loop and pause scenarios and the claim stream."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    done = subprocess.run(
        [sys.executable, "-m", "landed", "demo", "--dir", str(tmp_path / "demo"), "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    verdicts = {s["scenario"]: (s["verdict"], s["read_back"]) for s in result["scenarios"]}
    assert verdicts == {
        "rows-land": ("verified", "pass"),
        "swallowed": ("planned", "empty"),
        "half-migration": ("planned", "mismatch"),
        "already-there": ("planned", "vacuous"),
        "publish-500": ("verified", "pass"),
        "blocked": ("executed", "pass"),
        "approval": ("verified", "pass"),
        # GOV-9: three runs land nothing, the tripwire trips, its one repair is verified.
        "loop-tripwire": ("healthy after 1 repair", "3 not landed, then the repair"),
        # GOV-4: paused, nothing written; resumed, every task verified.
        "paused-fleet": ("verified", "pass"),
    }
    assert all(s["ok"] for s in result["scenarios"]), result["scenarios"]
    # The approval scenario: held (nothing sent) until a named person approved, sent once.
    (approval,) = [s for s in result["scenarios"] if s["scenario"] == "approval"]
    assert approval["held_before_approval"] and approval["approved_by"] == "dana (finance)"
    assert approval["approver_key_id"]  # signed with the approver key the demo made
    assert approval["emails_sent"] == 1
    assert result["addresses"]["copies_of_post"] == 1
    assert all(s["in_ledger"] for s in result["scenarios"])  # read back from the ledger
    assert result["seconds"] < 120
    # The claim stream (landed.cli.demo.reconcile): the lie is not verified, the bad line is
    # reported, the replayed claim attaches without a second read.
    claims = {c["line"]: (c["verdict"], c["existing"]) for c in result["claim_stream"]}
    assert claims == {
        1: ("verified", False),
        2: ("planned", False),
        3: ("planned", False),
        4: ("invalid", False),
        5: ("verified", True),
        # Its own probe (every order, already there) verified before; now at most P2.
        6: ("built", False),
    }


@pytest.mark.slow
def test_landed_demo_keep_leaves_the_web_ui_up_until_ctrl_c(tmp_path: Path) -> None:
    """--keep: the address the demo prints answers until Ctrl-C, which stops everything."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    env["COLUMNS"] = "200"
    proc = subprocess.Popen(
        [sys.executable, "-m", "landed", "demo", "--dir", str(tmp_path / "demo"), "--keep"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + 110
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if "Ctrl-C stops it" in line or not line:
                break
        ui = next((w for w in "".join(seen).split() if w.startswith("http://127.0.0.1:")), None)
        assert ui is not None, "".join(seen)[-2000:]
        assert httpx.get(ui, timeout=10).status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        with pytest.raises(httpx.TransportError):
            httpx.get(ui, timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
