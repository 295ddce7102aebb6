"""The three roles as real processes: separation of credentials, and crashes that lose nothing.

Each test starts Temporal's dev server (SQLite file, WAL) and `python -m landed worker ROLE`
three times, exactly as `landed dev` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.sor import Site, act_runs, make_rows_db, publish_task, row_count, rows_task
from helpers.wait import until, until_sync
from temporalio.api.enums.v1 import EventType

import landed
from landed.cli.dev import _or_free
from landed.dev.roles import role_env
from landed.dev.server import free_port
from landed.dev.stack import DevStack
from landed.ledger.factory import open_ledger
from landed.signing import TrustStore
from landed.task.names import AGENT_TASK_WORKFLOW
from landed.task.spec import TaskSpec
from landed.temporal.settings import DEFAULT_RUNNER_QUEUE

TESTS = Path(__file__).parents[1]

# Real processes on two shared cores: give each test room beyond the suite's default timeout.
pytestmark = pytest.mark.timeout(300)


def _stack(tmp_path: Path, db: Path, site: Site, **kw: Any) -> DevStack:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    base.update(
        {
            # The verifier's read credentials to the systems of record.
            "LANDED_SOURCES__ROWS_DB__URL": f"sqlite:///{db}",
            "LANDED_SOURCES__SITE__URL": site.url,
            # The actor's own credentials: the same database and site, as the agent reaches them.
            "LANDED_ACTOR_CREDENTIALS": json.dumps(
                {"rows-db": f"sqlite:///{db}", "site": site.url}
            ),
            "LANDED_ACTOR_ACTS": "helpers.acts",
        }
    )
    return DevStack(
        home=tmp_path / ".landed",
        headless=True,
        base_env=base,
        env={"actor": {"PYTHONPATH": str(TESTS)}},
        **kw,
    )


async def _client(stack: DevStack) -> landed.Client:
    return await stack.client()


@asynccontextmanager
async def _running(
    tmp_path: Path, site: Site, actor_env: dict[str, str] | None = None
) -> AsyncIterator[tuple[DevStack, Path, landed.Client, TrustStore]]:
    """A started stack over a fresh rows db, with its client and its verifier's trusted key;
    stopped after the block."""
    db = make_rows_db(tmp_path / "sor" / "rows.db")
    stack = _stack(tmp_path, db, site)
    stack.env["actor"].update(actor_env or {})  # type: ignore[attr-defined]
    await stack.start()
    try:
        _, public = stack.keys()
        yield stack, db, await _client(stack), TrustStore.load([public])
    finally:
        stack.stop()


async def _until(what: str, check: Callable[[], bool], timeout: float = 90.0) -> None:
    await until(what, check, timeout=timeout)


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(
        item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item
    )


async def _settled_once(stack: DevStack, task_ids: list[str], trust: TrustStore) -> None:
    """Every task has exactly one receipt in the ledger, and none says done without a
    read-back that passed, was checked by the verifier and carries a valid signature."""
    ledger = await open_ledger(stack.ledger_url, create=False)
    try:
        for task_id in task_ids:
            stored = await ledger.get(task_id)
            assert len(stored) == 1, (task_id, stored)
            receipt = stored[0]
            if receipt.verdict in ("verified", "reconciled"):
                backs = [p for p in receipt.proof if p.kind in landed.READ_BACK_KINDS]
                assert backs and all(p.result == "pass" for p in backs)
                assert all(trust.signature_ok(receipt, p) for p in backs)
                assert all((p.checked_by or "").startswith("verifier@") for p in backs)
    finally:
        await ledger.close()


@pytest.fixture
def site() -> AsyncIterator[Site]:
    s = Site().start()
    yield s  # type: ignore[misc]
    s.stop()


def _home_with_cloud_profile(tmp_path: Path) -> Path:
    home = tmp_path / "user-home"
    profile = home / ".config" / "temporalio" / "temporal.toml"
    profile.parent.mkdir(parents=True)
    profile.write_text(
        '[profile.default]\naddress = "cloud.example:7233"\napi_key = "cloud-api-key-4"\n'
        "[profile.default.tls]\n"
    )
    return home


async def test_actor_process_holds_no_verifier_or_runner_secret(tmp_path: Path, site: Site) -> None:
    db = make_rows_db(tmp_path / "sor" / "rows.db")
    stack = _stack(tmp_path, db, site)
    # Secrets the parent holds that only other roles may see.
    stack.base_env = {  # type: ignore[assignment]
        **dict(stack.base_env or {}),
        "LANDED_SOURCES__ORDERS__URL": "postgresql://reader:orders-secret-7@db/orders",
        "LANDED_LEDGER_URL": f"sqlite:///{tmp_path / 'ledger-from-env.db'}",
        # The user's own shell credentials: the runner may need them, the agent may not.
        "PGPASSWORD": "shell-pg-secret-3",
        "DATABASE_URL": "postgresql://app:shell-db-secret-5@db/app",
        # ...unless the user hands one to the actor by name.
        "AGENT_API_TOKEN": "handed-to-actor-9",
        "LANDED_ACTOR_PASS_ENV": "AGENT_API_TOKEN",
        # A home whose Temporal profile points at the user's own cluster (API key, TLS): the
        # roles talk to the embedded server regardless, and the actor never sees that key.
        "HOME": str(_home_with_cloud_profile(tmp_path)),
    }
    await stack.start()
    try:
        client = await _client(stack)
        receipt = await client.run(rows_task("sep-1", db, expect=2, batch="sep", write=2))
        assert receipt.verdict == "verified"

        private, _public = stack.keys()
        actor = stack.roles["actor"]
        env = _environ(actor.pid)
        blob = "\n".join(f"{k}={v}" for k, v in env.items())
        ready = json.dumps(actor.ready)
        forbidden = [
            str(private),
            private.name,
            "orders-secret-7",
            "shell-pg-secret-3",
            "shell-db-secret-5",
            "cloud-api-key-4",
            "user-home",
            "ledger-from-env",
            "ledger.db",
            "LANDED_SOURCES__",
            "LANDED_VERIFIER_",
            "LANDED_RUNNER_",
            "LANDED_LEDGER_URL",
        ]
        for needle in forbidden:
            assert needle not in blob, f"actor environment holds {needle}"
            assert needle not in ready, f"actor configuration holds {needle}"
        assert set(actor.ready or {}) == {
            "event",
            "role",
            "task_queue",
            "identity",
            "acts",
            "credentials",
            "address",
            "namespace",
            "tracing",  # "off" here: the protocol when OTEL_* names an endpoint
        }
        assert (actor.ready or {})["tracing"] == "off"
        assert (actor.ready or {})["credentials"] == ["rows-db", "site"]  # names, not values
        # Each role works in its own directory; the key and the ledger are outside the
        # actor's, and nothing the actor is started with names either.
        home = (tmp_path / ".landed").resolve()
        # The verifier's and the runner's /proc files are closed to another process of the
        # same user (undumpable, landed.util.confine): only root reads them here.
        seen = stack.roles if os.geteuid() == 0 else {"actor": actor}
        cwds = {r: Path(os.readlink(f"/proc/{p.pid}/cwd")) for r, p in seen.items()}
        assert cwds == {r: home / r for r in seen}
        ledger = Path(stack.ledger_url.removeprefix("sqlite:///"))
        for secret in (private, ledger):
            assert not secret.resolve().is_relative_to(cwds["actor"]), secret
        in_actor_dir = [p.name for p in cwds["actor"].rglob("*")]
        assert not [n for n in in_actor_dir if n.endswith((".key", ".db", ".pub"))], in_actor_dir
        cmdline = Path(f"/proc/{actor.pid}/cmdline").read_bytes().decode(errors="replace")
        for needle in (str(private), private.name, "ledger", "keys"):
            assert needle not in cmdline, f"actor command line holds {needle}"
            assert needle not in blob, f"actor environment holds {needle}"
        # The others hold what they need, each in its own process and identity.
        if os.geteuid() == 0:
            assert str(private) in _environ(stack.roles["verifier"].pid).values()
            runner_env = _environ(stack.roles["runner"].pid)
            assert "ledger-from-env" in runner_env["LANDED_LEDGER_URL"]
            assert runner_env["PGPASSWORD"] == "shell-pg-secret-3"
        else:
            with pytest.raises(PermissionError):
                _environ(stack.roles["verifier"].pid)
        assert env["AGENT_API_TOKEN"] == "handed-to-actor-9" and env["PATH"]
        assert env["HOME"] == str(home / "actor") and env["TEMPORAL_CONFIG_FILE"] == os.devnull
        identities = {r: (p.ready or {})["identity"] for r, p in stack.roles.items()}
        assert len(set(identities.values())) == 3
        assert all(identities[r].startswith(f"{r}@") for r in identities)
        assert len({p.pid for p in stack.roles.values()}) == 3
    finally:
        stack.stop()


def _run_role(role: str, address: str, extra: dict[str, str], tmp_path: Path) -> tuple[int, str]:
    env = role_env(role, base=dict(os.environ), temporal_address=address, extra=extra)
    return _worker(role, env, tmp_path)


def _worker(role: str, env: dict[str, str], tmp_path: Path) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "landed", "worker", role],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stderr


def _run_role_as_given(
    role: str, address: str, extra: dict[str, str], tmp_path: Path
) -> tuple[int, str]:
    """A role started by hand: its environment as given, not filtered per role."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    env.update({"TEMPORAL_ADDRESS": address, "TEMPORAL_CONFIG_FILE": os.devnull, **extra})
    return _worker(role, env, tmp_path)


def test_verifier_refuses_actor_identity_or_queue(temporal_dev: str, tmp_path: Path) -> None:
    from landed.signing import KeyPair

    private, _public = KeyPair.generate().save(tmp_path / "keys")
    key = {"LANDED_VERIFIER_SIGNING_KEY": str(private)}
    code, err = _run_role(
        "verifier", temporal_dev, {**key, "LANDED_VERIFIER_TASK_QUEUE": "landed-actor"}, tmp_path
    )
    assert code == 3 and "task queue" in err and "LANDED_VERIFIER_TASK_QUEUE" in err
    code, err = _run_role(
        "verifier", temporal_dev, {**key, "LANDED_VERIFIER_IDENTITY": "actor@box:1"}, tmp_path
    )
    assert code == 3 and "identity" in err and "Traceback" not in err
    code, err = _run_role("verifier", temporal_dev, {}, tmp_path)
    assert code == 3 and "signing key" in err and "landed keys new" in err
    code, err = _run_role("runner", temporal_dev, {}, tmp_path)
    assert code == 3 and "LANDED_RUNNER_TRUST" in err
    # The settings are checked before connecting: no server answers at port 1, and the
    # message is still the missing setting, not the connection.
    code, err = _run_role("verifier", "127.0.0.1:1", {}, tmp_path)
    assert code == 3 and "signing key" in err, err
    code, err = _run_role("runner", "127.0.0.1:1", {}, tmp_path)
    assert code == 3 and "LANDED_RUNNER_TRUST" in err, err


def test_roles_refuse_each_others_queues_and_name_bad_settings_without_values(
    temporal_dev: str, tmp_path: Path
) -> None:
    from landed.signing import KeyPair

    private, _public = KeyPair.generate().save(tmp_path / "keys")
    key = {"LANDED_VERIFIER_SIGNING_KEY": str(private)}
    # A verifier spelled with capitals is the actor all the same.
    code, err = _run_role(
        "verifier", temporal_dev, {**key, "LANDED_VERIFIER_IDENTITY": "Actor@box:1"}, tmp_path
    )
    assert code == 3 and "identity" in err, err
    for queue in ("landed-verifier", "landed-runner"):
        code, err = _run_role("actor", temporal_dev, {"LANDED_ACTOR_TASK_QUEUE": queue}, tmp_path)
        assert code == 3 and "LANDED_ACTOR_TASK_QUEUE" in err and queue in err, err
    # A source or credential given in a bad shape: its field is named, its value never printed,
    # and (for the verifier) before any connection is tried.
    bad_source = {**key, "LANDED_SOURCES__ORDERS__URL": "mysql://reader:S3cretPW@db/orders"}
    code, err = _run_role("verifier", "127.0.0.1:1", bad_source, tmp_path)
    assert code == 3 and "sources.orders" in err and "S3cretPW" not in err, err
    bad_credential = {"LANDED_ACTOR_CREDENTIALS": '{"db": {"url": "postgresql://u:ActorPW@h/db"}}'}
    code, err = _run_role("actor", temporal_dev, bad_credential, tmp_path)
    assert code == 3 and "credentials" in err and "ActorPW" not in err, err


def test_bad_connection_settings_and_misplaced_secrets_exit_3_naming_the_fix(
    temporal_dev: str, tmp_path: Path
) -> None:
    """Each refusal comes before "ready", with exit 3 (a setting to fix), never 1 ("is Temporal
    running?") and never a secret's value."""
    from landed.signing import KeyPair

    private, public = KeyPair.generate().save(tmp_path / "keys")
    key = {"LANDED_VERIFIER_SIGNING_KEY": str(private)}
    bad_pem = tmp_path / "client.pem"
    bad_pem.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    cases: list[tuple[str, dict[str, str], str]] = [
        ("actor", {"TEMPORAL_NAMESPACE": "no-such-ns"}, "namespace 'no-such-ns' does not exist"),
        ("actor", {"TEMPORAL_PROFILE": "nope"}, "connection settings cannot be loaded"),
        ("actor", {"TEMPORAL_TLS_CLIENT_CERT_PATH": "/no/such.pem"}, "cannot be loaded"),
        # The verifier meets the actor's own settings where one environment holds both.
        (
            "verifier",
            {**key, "LANDED_ACTOR_TASK_QUEUE": "acts", "LANDED_VERIFIER_TASK_QUEUE": "acts"},
            "is the actor's",
        ),
        (
            "verifier",
            {**key, "LANDED_ACTOR_IDENTITY": "agent-7", "LANDED_VERIFIER_IDENTITY": "Agent-7"},
            "is the actor's",
        ),
        ("actor", {"LANDED_LEDGER_URL": "postgresql://u:LedgerPW@h/db"}, "LANDED_LEDGER_URL"),
        (
            "actor",
            {"LANDED_RUNNER_LEDGER_URL": "postgresql://u:LedgerPW@h/db"},
            "LANDED_RUNNER_LEDGER_URL",
        ),
        # The signing key's path is no secret, but an act that can read it could sign for the
        # verifier: the actor refuses to start with it in reach.
        ("actor", key, "LANDED_VERIFIER_SIGNING_KEY"),
        # A runner that would send the verify step to the actor's queue.
        (
            "runner",
            {
                "LANDED_RUNNER_TRUST": str(public),
                "LANDED_RUNNER_ACTOR_TASK_QUEUE": "acts",
                "LANDED_RUNNER_VERIFIER_TASK_QUEUE": "acts",
            },
            "must run on the verifier's own queue",
        ),
        (
            "actor",
            {"LANDED_SOURCES__ORDERS__URL": "postgresql://r:SrcPW@h/db"},
            "LANDED_SOURCES__ORDERS__URL",
        ),
        (
            "actor",
            {"LANDED_ACTOR_CREDENTIALS": '{"db": "postgres://u:s3cretpw@h/db"'},
            "credentials",
        ),
        ("actor", {"LANDED_ACTOR_GRACEFUL_SHUTDOWN_S": "inf"}, "graceful_shutdown_s"),
        # Found by the connection itself, these read as "is Temporal running?" (exit 1).
        (
            "actor",
            {"TEMPORAL_TLS_CLIENT_CERT_PATH": str(bad_pem), "TEMPORAL_TLS_CLIENT_KEY_DATA": "k"},
            "TEMPORAL_TLS_CLIENT_CERT_PATH",
        ),
        ("actor", {"TEMPORAL_GRPC_META_X_TEAM": "s3cretpw\x01"}, "TEMPORAL_GRPC_META_"),
        ("actor", {"TEMPORAL_API_KEY": "s3cretpw\n"}, "TEMPORAL_API_KEY"),
    ]
    for role, env, says in cases:
        code, err = _run_role_as_given(role, temporal_dev, env, tmp_path)
        assert code == 3 and says in err, (env, err)
        assert "Traceback" not in err
        for secret in ("LedgerPW", "SrcPW", "s3cretpw"):
            assert secret not in err
    shared = tmp_path / "shared.key"
    shared.write_bytes(private.read_bytes())
    shared.chmod(0o644)
    code, err = _run_role(
        "verifier", temporal_dev, {"LANDED_VERIFIER_SIGNING_KEY": str(shared)}, tmp_path
    )
    assert code == 3 and "can be read by others" in err and "chmod 600" in err, err


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


async def test_sigkill_actor_and_verifier_lose_nothing_duplicate_nothing(
    tmp_path: Path, site: Site
) -> None:
    async with _running(tmp_path, site) as (stack, db, client, trust):
        # Killed before its write: the read-back shows nothing landed, so the act runs again
        # (same idempotency key). Killed after its write: the read-back finds it, no re-run.
        before = await client.start(
            rows_task("kill-before", db, expect=3, batch="kb", write=3, sleep_before_s=15)
        )
        after = await client.start(
            rows_task("kill-after", db, expect=3, batch="ka", write=3, sleep_after_s=15)
        )
        await _until(
            "both acts in flight, one before and one after its write",
            lambda: bool(act_runs(db, "kill-before")) and row_count(db, "ka") == 3,
        )
        stack.roles["actor"].kill()
        stack.start_role("actor")
        await stack.roles["actor"].wait_ready()
        r_before, r_after = await before.result(), await after.result()
        assert r_before.verdict == "verified" and r_after.verdict == "verified"
        assert [a for a, _ in act_runs(db, "kill-before")] == [1, 2]
        assert {k for _, k in act_runs(db, "kill-before")} == {"kill-before"}
        assert [a for a, _ in act_runs(db, "kill-after")] == [1]
        assert row_count(db, "kb") == 3 and row_count(db, "ka") == 3

        # The verifier dies while the after-read is in flight; the read is retried on the
        # restarted verifier, and the publish still happened exactly once.
        site.count_delay_after_publish_s = 30.0  # the after-read hangs until the kill
        task = await client.start(publish_task("kill-verifier", "kv"))
        await _until(
            "the after-read in flight", lambda: site.publishes >= 1 and site.count_reads >= 2
        )
        stack.roles["verifier"].kill()
        site.count_delay_after_publish_s = 0.0
        stack.start_role("verifier")
        await stack.roles["verifier"].wait_ready()
        receipt = await task.result()
        assert receipt.verdict == "verified"
        assert site.count("kv") == 1 and site.publishes == 1
        await _settled_once(stack, ["kill-before", "kill-after", "kill-verifier"], trust)


@pytest.mark.parametrize("grace", ["30", "0.3"])
async def test_sigterm_drains_the_actor_and_an_act_in_flight_runs_once(
    tmp_path: Path, site: Site, grace: str
) -> None:
    """SIGTERM (a deploy) lets the act in flight finish within the actor's grace; past it the
    act is cancelled, but its thread still writes, and the attempt is reported only after
    that, so the read-back finds the rows and the act never runs twice. No actor is running
    afterwards: a second attempt would wait for one and the task would never settle."""
    actor_env = {"LANDED_ACTOR_GRACEFUL_SHUTDOWN_S": grace}
    async with _running(tmp_path, site, actor_env) as (stack, db, client, trust):
        task = await client.start(
            rows_task("drain", db, expect=3, batch="dr", write=3, sleep_before_s=2)
        )
        await _until("the act in flight", lambda: bool(act_runs(db, "drain")))
        actor = stack.roles["actor"]
        assert actor.proc is not None
        actor.proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(actor.proc.wait, 60)
        assert code == 0
        assert row_count(db, "dr") == 3  # written before the actor left
        receipt = await asyncio.wait_for(task.result(), 60)
        assert receipt.verdict == "verified"
        assert act_runs(db, "drain") == [(1, "drain")]
        await _settled_once(stack, ["drain"], trust)


async def test_a_runner_stalled_past_its_workflow_tasks_settles_each_task_once(
    tmp_path: Path, site: Site
) -> None:
    """The runner stops (SIGSTOP: a long pause, an overloaded machine) again and again for
    longer than a workflow task may take, while tasks act, read back and settle. Each stalled
    task runs again and grades again, sometimes after its receipt is already in the ledger:
    every task still settles exactly once, verified, with its act run once, and none fails."""
    async with _running(tmp_path, site) as (stack, db, client, trust):
        runner = stack.roles["runner"].proc
        assert runner is not None
        ids = [f"stall-{i}" for i in range(24)]
        handles = [
            await client.temporal.start_workflow(
                AGENT_TASK_WORKFLOW,
                TaskSpec.model_validate(rows_task(task_id, db, expect=1, batch=task_id, write=1)),
                id=task_id,
                task_queue=DEFAULT_RUNNER_QUEUE,
                result_type=landed.Receipt,
                # A short workflow task timeout, so each pause below outlasts the tasks the
                # runner had started.
                task_timeout=timedelta(seconds=1),
            )
            for task_id in ids
        ]
        try:
            for _ in range(8):
                runner.send_signal(signal.SIGSTOP)
                await asyncio.sleep(1.5)
                runner.send_signal(signal.SIGCONT)
                await asyncio.sleep(0.6)
        finally:
            runner.send_signal(signal.SIGCONT)  # never leave it stopped
        receipts = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 180)
        assert all(r.verdict == "verified" for r in receipts), [r.verdict for r in receipts]
        for task_id in ids:
            assert act_runs(db, task_id) == [(1, task_id)] and row_count(db, task_id) == 1
        await _settled_once(stack, ids, trust)
        timed_out = 0
        for h in handles:
            history = await h.fetch_history()
            timed_out += any(
                e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT for e in history.events
            )
        assert timed_out, "no workflow task outlasted a pause: the stall was not exercised"


async def test_sigkill_runner_while_tasks_settle_loses_nothing_settles_once(
    tmp_path: Path, site: Site
) -> None:
    """The runner is killed while tasks are between act and settle, twice; a new runner picks
    their workflows up from history. No act runs again and every task settles once, verified."""
    async with _running(tmp_path, site) as (stack, db, client, trust):
        ids = [f"runner-kill-{i}" for i in range(20)]
        handles = [
            await client.start(rows_task(task_id, db, expect=1, batch=task_id, write=1))
            for task_id in ids
        ]
        for wave in (5, 12):
            await _until(
                f"{wave} acts done", lambda n=wave: sum(row_count(db, t) for t in ids) >= n
            )
            stack.roles["runner"].kill()
            stack.start_role("runner")
            await stack.roles["runner"].wait_ready()
        receipts = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 180)
        assert all(r.verdict == "verified" for r in receipts), [r.verdict for r in receipts]
        for task_id in ids:
            assert act_runs(db, task_id) == [(1, task_id)] and row_count(db, task_id) == 1
        await _settled_once(stack, ids, trust)
        # The killed runners' work was taken over: tasks ran on more than one runner.
        runners = set()
        for task_id in ids:
            history = await client.temporal.get_workflow_handle(task_id).fetch_history()
            runners |= {
                e.workflow_task_started_event_attributes.identity
                for e in history.events
                if e.HasField("workflow_task_started_event_attributes")
            }
        assert len(runners) >= 2, runners


async def test_dev_server_restart_with_file_db_loses_no_task(tmp_path: Path, site: Site) -> None:
    async with _running(tmp_path, site) as (stack, db, client, trust):
        assert stack.server is not None and stack.server.db_file is not None
        ids = [f"restart-{i}" for i in range(6)]
        tasks = {
            task_id: rows_task(task_id, db, expect=2, batch=f"rs{i}", write=2, sleep_before_s=1.5)
            for i, task_id in enumerate(ids)
        }
        for task in tasks.values():
            await client.start(task)
        await _until("three acts in flight", lambda: all(act_runs(db, t) for t in ids[:3]))
        # Kill the server while acts are in flight, then start it again on its file.
        stack.server.kill()
        await asyncio.sleep(1.0)
        # A task started while the server is down waits for it, as do the waiters: the same
        # client, no retry loop of the caller's own.
        ids.append("restart-late")
        tasks["restart-late"] = rows_task("restart-late", db, expect=2, batch="rs6", write=2)
        late = asyncio.create_task(client.run(tasks["restart-late"]))
        # Down past the SDK's own retries (about 10 s), as a server recovering from a full disk
        # answers "shard status unknown" for longer.
        await asyncio.sleep(12.0)
        assert not late.done(), late
        await asyncio.to_thread(stack.server.restart)
        receipts = [await client.run(tasks[task_id]) for task_id in ids[:-1]]
        receipts.append(await late)
        assert [r.task_id for r in receipts] == ids
        for i, receipt in enumerate(receipts):
            assert row_count(db, f"rs{i}") == 2, receipt.task_id  # never duplicated
            assert receipt.verdict == "verified", (receipt.task_id, receipt.landed)
        await _settled_once(stack, ids, trust)


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
