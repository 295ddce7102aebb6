"""The three roles as real processes, each with its own credentials: the actor holds no
verifier or runner secret, and a role given another's queue, identity or a misplaced secret
refuses to start (exit 3), naming the setting and never its value.

Each test starts Temporal's dev server and `python -m landed worker ROLE`, as `landed dev` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.dev_stack import dev_stack
from helpers.sor import Site, make_rows_db, rows_task

from landed.dev.roles import role_env

# Real processes on two shared cores: give each test room beyond the suite's default timeout.
pytestmark = pytest.mark.timeout(300)


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(
        item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item
    )


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
    stack = dev_stack(tmp_path, db, site)
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
        client = await stack.client()
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
