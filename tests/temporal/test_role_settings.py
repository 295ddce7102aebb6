"""Each role's settings kept to itself (landed.dev.roles, landed.temporal.settings), the acts the
actor collects, and the plugin's converter, sandbox and connection options."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from landed.dev.roles import role_env
from landed.dev.server import DevError
from landed.task.acts import ActLoadError, collect_acts
from landed.temporal.plugin import (
    SANDBOX_PASSTHROUGH,
    ConnectionSettingsError,
    connect_options,
    landed_plugin,
    strict_workflow_runner,
)
from landed.temporal.registry import actor_acts
from landed.temporal.settings import SeparationError, VerifierSettings


def test_verifier_refuses_actor_queue_and_identity() -> None:
    with pytest.raises(SeparationError, match="task queue"):
        VerifierSettings(task_queue="landed-actor").check_separation()
    with pytest.raises(SeparationError, match="identity"):
        VerifierSettings(identity="actor@host:1").check_separation()
    with pytest.raises(SeparationError, match="identity"):
        VerifierSettings(identity="me", actor_identity="me").check_separation()
    VerifierSettings(identity="verifier@h:2").check_separation()


def test_role_env_keeps_each_role_to_its_own_settings() -> None:
    parent = {
        "PATH": "/bin",
        "LANDED_ACTOR_CREDENTIALS": '{"site": "http://x"}',
        "LANDED_VERIFIER_SIGNING_KEY": "/k.key",
        "LANDED_SOURCES__ORDERS__URL": "postgresql://reader:secret@db/x",
        "LANDED_LEDGER_URL": "postgresql://ledger:pw@db/l",
        "TEMPORAL_ADDRESS": "elsewhere:7233",
    }
    actor = role_env("actor", base=parent, temporal_address="127.0.0.1:1")
    assert actor["LANDED_ACTOR_CREDENTIALS"]
    assert not any(v in json.dumps(actor) for v in ("/k.key", "secret", "ledger:pw"))
    assert actor["TEMPORAL_ADDRESS"] == "127.0.0.1:1"
    verifier = role_env("verifier", base=parent, temporal_address="127.0.0.1:1")
    assert "LANDED_SOURCES__ORDERS__URL" in verifier and "LANDED_LEDGER_URL" not in verifier
    runner = role_env("runner", base=parent, temporal_address="127.0.0.1:1")
    assert "LANDED_LEDGER_URL" in runner and "LANDED_VERIFIER_SIGNING_KEY" not in runner
    with pytest.raises(DevError, match="another role"):
        role_env("actor", base=parent, temporal_address="a", extra={"LANDED_RUNNER_X": "1"})


def test_the_actor_inherits_only_what_a_process_needs_and_what_is_handed_to_it() -> None:
    parent = {
        "PATH": "/bin",
        "HOME": "/home/u",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": "/src",
        "LD_LIBRARY_PATH": "/opt/py/lib",
        "PYTHON_INDEX_TOKEN": "index-secret",
        "PGPASSWORD": "pg-secret",
        "DATABASE_URL": "postgresql://app:db-secret@db/app",
        "HTTPS_PROXY": "http://me:proxy-secret@proxy:3128",
        "AWS_SECRET_ACCESS_KEY": "aws-secret",
        "OPENAI_API_KEY": "model-key",
        "LANDED_ACTOR_PASS_ENV": " OPENAI_API_KEY ,",
    }
    actor = role_env("actor", base=parent, temporal_address="127.0.0.1:1")
    kept = ("PATH", "LC_ALL", "PYTHONPATH", "LD_LIBRARY_PATH", "OPENAI_API_KEY")
    assert {k: actor[k] for k in kept} == {k: parent[k] for k in kept}
    # HOME too is the user's (files such as ~/.pgpass); landed dev gives the actor its own.
    assert "HOME" not in actor
    secrets = ("pg-secret", "db-secret", "aws-secret", "proxy-secret", "index-secret")
    assert not any(s in json.dumps(actor) for s in secrets)
    runner = role_env("runner", base=parent, temporal_address="127.0.0.1:1")
    assert runner["PGPASSWORD"] == "pg-secret"  # a ledger URL may lean on it
    lower = role_env(
        "verifier", base={**parent, "landed_runner_ledger_url": "x"}, temporal_address="x:1"
    )
    assert "landed_runner_ledger_url" not in lower  # read whatever the case of the name
    assert "PYTHONUTF8" in role_env(
        "actor", base={**parent, "PYTHONUTF8": "1"}, temporal_address="x:1"
    )
    # No role reads the user's Temporal profile file (API key, TLS for their own cluster).
    for env in (actor, runner, role_env("verifier", base=parent, temporal_address="x:1")):
        assert env["TEMPORAL_CONFIG_FILE"] == os.devnull
    for bad in ("LANDED_RUNNER_LEDGER_URL", "landed_runner_ledger_url", "TEMPORAL_API_KEY"):
        with pytest.raises(DevError, match="never passed to the actor"):
            role_env(
                "actor",
                base={**parent, "LANDED_ACTOR_PASS_ENV": bad},
                temporal_address="127.0.0.1:1",
            )
    with pytest.raises(DevError, match="OPENAI_KEY, which this shell does not set"):
        role_env(
            "actor",
            base={**parent, "LANDED_ACTOR_PASS_ENV": "OPENAI_KEY"},
            temporal_address="127.0.0.1:1",
        )


def test_collect_acts_finds_builtins_and_rejects_missing(tmp_path: Path) -> None:
    acts = actor_acts([])  # the actor's registry hands collect_acts the built-in acts' module
    assert {"http.request", "sql.execute", "command"} <= set(acts)
    with pytest.raises(ActLoadError, match="cannot import act module"):
        collect_acts(["no_such_module_for_landed"])


def test_plugin_sets_converter_and_passthrough() -> None:
    plugin = landed_plugin()
    cfg = plugin.configure_client({"data_converter": None})  # type: ignore[typeddict-item]
    assert cfg["data_converter"] is pydantic_data_converter
    runner = plugin.workflow_runner(SandboxedWorkflowRunner())  # type: ignore[operator]
    passthrough = runner.restrictions.passthrough_modules
    assert set(SANDBOX_PASSTHROUGH) <= passthrough
    assert "landed.task.spec" in passthrough and "landed.receipts.grading" in passthrough
    # Workers share landed's own workflow code; the package root and everything else in it
    # (activities, the CLI) are not passed through.
    assert "landed.workflows" in passthrough and "landed" not in passthrough
    # The strict runner the replay tests use re-imports the workflow code for every run.
    strict = strict_workflow_runner()
    assert isinstance(strict, SandboxedWorkflowRunner)
    assert "landed.workflows" not in strict.restrictions.passthrough_modules
    assert "landed.receipts.grading" in strict.restrictions.passthrough_modules
    # A worker given the strict runner (LANDED_RUNNER_SANDBOX=strict) keeps it as it is.
    assert plugin.workflow_runner(strict) is strict  # type: ignore[operator]


def test_connect_options_follow_temporal_envconfig() -> None:
    env = {"TEMPORAL_ADDRESS": "cloud.example:7233", "TEMPORAL_NAMESPACE": "ns.acct"}
    opts = connect_options(env=env)
    assert opts["target_host"] == "cloud.example:7233"
    assert opts["namespace"] == "ns.acct"
    env_key = {**env, "TEMPORAL_API_KEY": "k"}
    assert connect_options(env=env_key)["tls"] is True  # an API key implies TLS
    assert connect_options(env={}, address="h:1")["target_host"] == "h:1"


def test_connect_options_refuse_tls_files_and_headers_the_connection_would_fail_on(
    tmp_path: Path,
) -> None:
    """Named before connecting, with the setting to fix and never the value."""
    from landed.signing import KeyPair

    good_key = tmp_path / "good.key"
    good_key.write_bytes(KeyPair.generate().private_pem())
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("hunter2-not-a-pem\n")
    cases = [
        ({"TEMPORAL_TLS_CLIENT_KEY_PATH": str(not_pem), "TEMPORAL_TLS_CLIENT_CERT_DATA": "x"},
         "TEMPORAL_TLS_CLIENT_CERT_PATH"),
        ({"TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(good_key)}, "TEMPORAL_TLS_SERVER_CA_CERT_PATH"),
        ({"TEMPORAL_TLS_CLIENT_KEY_PATH": str(good_key)}, "come as a pair"),
        ({"TEMPORAL_GRPC_META_X_TEAM": "hunter2\r\nx-admin: 1"}, "TEMPORAL_GRPC_META_"),
        ({"TEMPORAL_GRPC_META_X_TEAM": "h\u00fcnter2"}, "non-ASCII"),
        ({"TEMPORAL_API_KEY": "hunter2\n"}, "TEMPORAL_API_KEY"),
    ]  # fmt: skip
    for env, says in cases:
        with pytest.raises(ConnectionSettingsError) as caught:
            connect_options(env=env)
        assert says in str(caught.value) and "hunter2" not in str(caught.value), env
    # A key that does parse, with its certificate given, passes on to the connection; so do
    # an ordinary header and key.
    cert = _self_signed(good_key)
    opts = connect_options(
        env={
            "TEMPORAL_TLS_CLIENT_KEY_PATH": str(good_key),
            "TEMPORAL_TLS_CLIENT_CERT_DATA": cert,
            "TEMPORAL_GRPC_META_X_TEAM": "blue team\t7",
            "TEMPORAL_API_KEY": "abc.def-ghi",
        }
    )
    assert opts["tls"].client_cert == cert.encode()
    assert opts["rpc_metadata"]["x-team"] == "blue team\t7"


def _self_signed(key_path: Path) -> str:
    """A PEM certificate for the key in ``key_path``, signed by itself."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509.oid import NameOID

    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "landed-test")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())  # type: ignore[arg-type]
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, None)  # type: ignore[arg-type]
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()
