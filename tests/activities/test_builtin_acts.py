"""Built-in acts never put the actor's credentials in what they report or raise: both reach the
receipt and the ledger. A real HTTP server on 127.0.0.1, real SQLite, a refused PostgreSQL port."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.http import LocalHTTP
from helpers.wait import until, until_sync

from landed.activities._threads import to_the_end
from landed.activities.builtin_acts import command, http_request, sql_execute
from landed.task.acts import ActContext
from landed.task.credentials import Credentials

TOKEN = "CANARYtok9f3a"
QUERY_SECRET = "CANARYq77x"
USER = "CANARYuser"


@pytest.fixture
def server() -> Iterator[LocalHTTP]:
    srv = LocalHTTP().start()
    yield srv
    srv.stop()


def _ctx(**credentials: str) -> ActContext:
    return ActContext(
        task_id="t",
        attempt=1,
        idempotency_key="k",
        identity="actor@t",
        credentials=Credentials(credentials),
    )


def _clean(text: str) -> None:
    for canary in (TOKEN, QUERY_SECRET, USER):
        assert canary not in text, f"{canary} leaked: {text}"


async def test_http_report_names_the_url_without_userinfo_or_query_secrets(
    server: LocalHTTP,
) -> None:
    # The server echoes the token back in its body, as error pages sometimes do.
    server.route("/api/posts", status=201, body=f"created; auth was {TOKEN}".encode())
    base = server.base.replace("http://", f"http://{USER}:{TOKEN}@") + "/api"
    ctx = _ctx(site=base)
    report = await http_request(
        {"credential": "site", "method": "GET", "path": f"posts?api_key={QUERY_SECRET}&page=1"},
        ctx,
    )
    assert report.claimed_status == "done"
    assert "/api/posts" in report.report and "HTTP 201" in report.report
    assert "api_key=[redacted]" in report.report
    _clean(report.report)


async def test_a_secret_the_reports_cut_would_halve_is_still_scrubbed(server: LocalHTTP) -> None:
    server.route("/api/posts", status=201, body=b"x" * 1985 + f" auth was {TOKEN}".encode())
    base = server.base.replace("http://", f"http://{USER}:{TOKEN}@") + "/api"
    report = await http_request(
        {"credential": "site", "method": "GET", "path": "posts"}, _ctx(site=base)
    )
    assert TOKEN[:5] not in report.report, report.report[-40:]  # old: "auth was CANAR"


async def test_http_errors_name_the_url_without_credentials() -> None:
    ctx = _ctx(site=f"http://{USER}:{TOKEN}@127.0.0.1:1/api?token={QUERY_SECRET}")
    with pytest.raises(RuntimeError) as err:
        await http_request({"credential": "site", "timeout_s": 5}, ctx)
    _clean(str(err.value))
    assert "127.0.0.1:1" in str(err.value)


async def test_sql_errors_never_quote_the_dsn(tmp_path: Path) -> None:
    for dsn in (
        f"mysql://{USER}:{TOKEN}@db/x",  # unsupported: the old message quoted dsn[:20]
        f"postgresql://{USER}:{TOKEN}@127.0.0.1:1/db?connect_timeout=2",  # refused
        f"sqlite:///{tmp_path}/{USER}-{TOKEN}/missing/x.db",  # cannot open
    ):
        with pytest.raises((RuntimeError, ValueError)) as err:
            await sql_execute({"credential": "db", "statement": "select 1"}, _ctx(db=dsn))
        _clean(str(err.value))
        assert "sql.execute" in str(err.value)


@pytest.mark.slow
async def test_a_cancelled_command_act_leaves_nothing_running(tmp_path: Path) -> None:
    """Cancelled (the workflow gave up, the actor drains past its grace): the command and what
    it started are killed before the act reports, so nothing can write after the read-back."""
    marker, started = tmp_path / "late-write", tmp_path / "started"
    script = f"touch {started}; sleep 1.5 && touch {marker} & sleep 1.5 && touch {marker}; wait"
    task = asyncio.create_task(command({"argv": ["sh", "-c", script]}, _ctx()))
    # Cancel once the command runs, however slow the machine is.
    await until("the command started", started.exists, timeout=30, every=0.02)
    await asyncio.sleep(0.1)  # its two writers are forked by now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(2.0)
    assert not marker.exists(), "a process the act started kept running and wrote"


async def test_a_cancelled_sync_act_reports_only_after_its_thread_is_done() -> None:
    """A thread cannot be stopped: the cancelled act waits for it, then reports its outcome."""
    done: list[str] = []

    def write() -> str:
        time.sleep(0.5)
        done.append("written")
        return "ok"

    task = asyncio.create_task(to_the_end(write))
    await asyncio.sleep(0.1)
    task.cancel()
    assert await task == "ok"  # what the thread really did, once it is done
    assert done == ["written"]

    def fail() -> str:
        time.sleep(0.3)
        raise RuntimeError("the write returned an error")

    failing = asyncio.create_task(to_the_end(fail))
    await asyncio.sleep(0.1)
    failing.cancel()
    await asyncio.sleep(0)
    failing.cancel()  # asked twice: still answered only by the thread
    with pytest.raises(RuntimeError, match="the write returned an error"):
        await failing


def _pid_in(path: Path) -> bool:
    return path.exists() and path.read_text().strip().isdigit()


@pytest.mark.slow
def test_a_command_act_stops_when_its_actor_is_killed(tmp_path: Path) -> None:
    """The actor dies outright (SIGKILL, the OOM killer) mid-act: no cleanup runs in it, and the
    command must not run on and write after the workflow has read back (and perhaps acted
    again)."""
    pid_file, marker = tmp_path / "pid", tmp_path / "late-write"
    writer = (
        "import os, pathlib, time; "
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); "
        f"time.sleep(1.5); pathlib.Path({str(marker)!r}).touch()"
    )
    actor = (
        "import asyncio, sys; "
        "from landed.activities.builtin_acts import command; "
        "from landed.task.acts import ActContext; "
        "ctx = ActContext(task_id='t', attempt=1, idempotency_key='k', identity='actor@t', "
        "credentials={}); "
        f"asyncio.run(command({{'argv': [sys.executable, '-c', {writer!r}]}}, ctx))"
    )
    proc = subprocess.Popen([sys.executable, "-c", actor])
    try:
        # The file exists from its open on; its pid is there once the write is done.
        until_sync("the command started", lambda: _pid_in(pid_file), timeout=30, every=0.02)
        proc.kill()
        proc.wait(timeout=10)
        time.sleep(2.5)
        assert not marker.exists(), "the command outlived its actor and wrote"
        child = int(pid_file.read_text())
        with pytest.raises(ProcessLookupError):
            os.kill(child, 0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.slow
async def test_a_command_act_stops_what_it_left_running_when_it_exits(tmp_path: Path) -> None:
    """The command exits at once and leaves a writer in the background: the act reports only
    with that writer gone, so nothing lands after the workflow reads back."""
    marker = tmp_path / "late-write"
    script = f"(sleep 1.5; touch {marker}) >/dev/null 2>&1 & echo started"
    report = await command({"argv": ["sh", "-c", script]}, _ctx())
    assert report.claimed_status == "done" and "started" in report.report
    await asyncio.sleep(2.5)
    assert not marker.exists(), "a process the command left running wrote after the act"
