"""Task spec validation at submit, role settings separation, the plugin and act collection."""

from __future__ import annotations

import ast
import asyncio
import datetime as dt
import enum
import json
import os
import subprocess
import textwrap
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers.source import parse
from pydantic import ValidationError
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from landed.dev.roles import role_env
from landed.dev.server import DevError
from landed.task.acts import ActLoadError, collect_acts
from landed.task.messages import ActReport
from landed.task.spec import DEFAULT_TIME_CAP, TaskSpec, TaskSpecError
from landed.task.validate import check_spec
from landed.temporal.plugin import (
    SANDBOX_PASSTHROUGH,
    ConnectionSettingsError,
    connect_options,
    landed_plugin,
    strict_workflow_runner,
)
from landed.temporal.registry import actor_acts
from landed.temporal.settings import SeparationError, VerifierSettings

RECORD = {
    "action": "insert 3 rows",
    "probe": {"kind": "record", "source": "orders-db", "query": "select count(*) from t"},
    "expect": {"type": "count", "value": 3},
}


def spec(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "task_id": "t-1",
        "owner": "agent-a",
        "outcome": "3 rows in t",
        "act": {"name": "sql.execute", "input": {}},
        "proof_plan": [RECORD],
    }
    base.update(over)
    return base


def test_valid_spec_defaults() -> None:
    check = check_spec(spec())
    assert check.warnings == []
    assert check.can_reach_verified
    assert check.spec.time_cap == DEFAULT_TIME_CAP == timedelta(minutes=30)
    assert check.spec.idempotency_key == "t-1"  # defaults to the task id: stable across retries


def test_invalid_spec_names_field_and_reason() -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(
            spec(task_id="", owner=None, proof_plan=[{**RECORD, "expect": {"type": "nope"}}])
        )
    fields = {f for f, _ in err.value.problems}
    assert "task_id" in fields
    assert "owner" in fields
    assert any(f.startswith("proof_plan.0.expect") for f in fields)
    assert "task_id:" in str(err.value)


def test_unknown_field_rejected_not_dropped() -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(spec(proof_plans=[]))
    assert err.value.problems[0][0] == "proof_plans"


def test_time_cap_bounds() -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(spec(time_cap=0.1))
    assert "time_cap" in str(err.value)
    assert check_spec(spec(time_cap="PT5M")).spec.time_cap == timedelta(minutes=5)


@pytest.mark.parametrize("owner", ["agent\x00x", "agent\x1b[2J", "a\nb", "agent\x85"])
def test_an_owner_with_a_control_character_is_refused_at_submit(owner: str) -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(spec(owner=owner))
    assert err.value.problems[0][0] == "owner"
    assert "control character" in str(err.value)
    assert check_spec(spec(owner="team-bot [eu] ü")).spec.owner == "team-bot [eu] ü"


def test_not_json_is_a_clear_error() -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec("{not json")
    assert "not JSON" in str(err.value)


def test_specs_temporal_or_json_readers_would_take_differently_are_refused() -> None:
    text = json.dumps(spec())
    twice = text.replace('"task_id": "t-1"', '"task_id": "t-1", "task_id": "t-2"')
    with pytest.raises(TaskSpecError, match="'task_id' appears twice"):
        check_spec(twice)
    lone = json.dumps(spec(act={"name": "sql.execute", "input": {"x": "\ud800"}}))
    with pytest.raises(TaskSpecError, match="lone surrogate") as caught:
        check_spec(lone)
    assert [field for field, _ in caught.value.problems] == ["act.input.x"]
    with pytest.raises(TaskSpecError, match="over the 262144 a task may hold"):
        check_spec(spec(outcome="x" * 2_100_000))
    # A TaskSpec changed after construction is checked again, not passed on as valid.
    built = check_spec(spec()).spec
    built.owner = ""
    with pytest.raises(TaskSpecError) as err:
        check_spec(built)
    assert err.value.problems[0][0] == "owner"


def test_no_probe_accepted_but_flagged() -> None:
    check = check_spec(spec(proof_plan=[]))
    assert not check.can_reach_verified
    assert any("can never reach verified" in w for w in check.warnings)


def test_only_command_probe_is_flagged() -> None:
    cmd = {
        "action": "x",
        "probe": {"kind": "command", "argv": ["true"]},
        "expect": {"type": "non_empty"},
    }
    check = check_spec(spec(proof_plan=[cmd]))
    assert not check.can_reach_verified
    assert any("no read-back probe" in w for w in check.warnings)
    assert any("weak default" in w for w in check.warnings)


def test_spec_round_trips_json() -> None:
    s = TaskSpec.model_validate(spec())
    again = TaskSpec.model_validate_json(s.model_dump_json())
    assert again == s


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


_MUTATING_METHODS = frozenset(
    (
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "popitem",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
        "__setitem__",
        "__delitem__",
        "__setattr__",
        "__delattr__",
    )
)


def _state_writes(
    source: str, shared: set[str], modules: frozenset[str] = frozenset()
) -> list[str]:
    """Statements in a module that could change state every run shares: a write to, a delete
    of, or a mutating method call on a module-level name, the class (type(self),
    self.__class__, a class by name), their attributes or items; and global statements.

    ``modules`` are the shared names bound to an imported module: a function of a module is not
    a container's method, so ``workflow.update(name=...)`` (the SDK's Update decorator) is no
    write; an assignment to a module's attribute still is."""

    def root(node: ast.expr) -> ast.expr:
        while isinstance(node, ast.Attribute | ast.Subscript):
            if isinstance(node, ast.Attribute) and node.attr == "__class__":
                return node  # self.__class__...: the class every run shares
            node = node.value
        return node

    def shared_root(node: ast.expr) -> bool:
        base = root(node)
        if isinstance(base, ast.Attribute):  # x.__class__
            return True
        if isinstance(base, ast.Call) and getattr(base.func, "id", None) == "type":
            return True  # type(self)
        return isinstance(base, ast.Name) and base.id in shared

    writes: list[str] = []
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Global | ast.Nonlocal):
            writes.append(f"line {node.lineno}: {type(node).__name__.lower()} {node.names}")
            continue
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute | ast.Subscript) and shared_root(target):
                writes.append(f"line {node.lineno}: {ast.unparse(target)}")
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in {"setattr", "delattr"} and node.args:
                if shared_root(node.args[0]):
                    writes.append(f"line {node.lineno}: {ast.unparse(node)}")
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in _MUTATING_METHODS
                and shared_root(func.value)
                and not (isinstance(func.value, ast.Name) and func.value.id in modules)
            ):
                writes.append(f"line {node.lineno}: {ast.unparse(node)}")
    return writes


def test_workflow_modules_hold_no_state_a_run_could_change() -> None:
    """Workers share landed's workflow modules across runs (SANDBOX_PASSTHROUGH): no module or
    class level container one run could fill for the next, and no code that writes to state at
    either level."""
    import importlib
    import pkgutil

    import landed.workflows

    modules = [landed.workflows] + [
        importlib.import_module(f"landed.workflows.{m.name}")
        for m in pkgutil.iter_modules(landed.workflows.__path__)
    ]
    assert len(modules) >= 2, modules
    mutable_types = list | dict | set | bytearray
    for module in modules:
        shared = {name for name in vars(module) if not name.startswith("__")}
        found = {
            name: type(value).__name__
            for name, value in vars(module).items()
            if not name.startswith("__") and isinstance(value, mutable_types)
        }
        for name, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == module.__name__:
                found |= {
                    f"{name}.{attr}": type(v).__name__
                    for attr, v in vars(value).items()
                    if not attr.startswith("__") and isinstance(v, mutable_types)
                }
            # Containers inside module-level objects (a RetryPolicy's error types, say).
            if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
                found |= {
                    f"{name}.{attr}": type(v).__name__
                    for attr, v in vars(value).items()
                    if isinstance(v, mutable_types)
                }
        assert found == {}, (module.__name__, found)
        imported = frozenset(n for n, v in vars(module).items() if isinstance(v, ModuleType))
        writes = _state_writes(Path(module.__file__ or "").read_text(), shared, imported)
        assert writes == [], (module.__name__, writes)


def test_the_state_check_finds_each_kind_of_write() -> None:
    source = textwrap.dedent(
        """
        CACHE = None
        class Flow:
            def run(self):
                CACHE.append(1)
                CACHE["k"] = 1
                del CACHE["k"]
                CACHE.x += 1
                setattr(CACHE, "x", 2)
                type(self).runs = 1
                self.__class__.seen.add(1)
                Flow.count = 2
                self.mine = 1
                local = []
                local.append(1)
        def f():
            global CACHE
        @workflow.update(name="approve")
        def approve(self): ...
        workflow.seen = 1
        workflow.cache.update(x=1)
        """
    )
    writes = _state_writes(source, {"CACHE", "Flow", "f", "workflow"}, frozenset({"workflow"}))
    assert sorted((w.split(":")[0] for w in writes), key=lambda w: int(w.split()[1])) == [
        "line 5", "line 6", "line 7", "line 8", "line 9", "line 10", "line 11", "line 12",
        "line 17", "line 20", "line 21",
    ], writes  # fmt: skip


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
    import datetime as dt

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


def test_collect_acts_finds_builtins_and_rejects_missing(tmp_path: Path) -> None:
    acts = actor_acts([])  # the actor's registry hands collect_acts the built-in acts' module
    assert {"http.request", "sql.execute", "command"} <= set(acts)
    with pytest.raises(ActLoadError, match="cannot import act module"):
        collect_acts(["no_such_module_for_landed"])


# --- bad input at submit: a clear error naming the field, never a traceback ----------------------


class _Colour(enum.StrEnum):
    RED = "red"


@pytest.mark.parametrize("form", ["mapping", "model"])
def test_values_json_would_change_are_refused_naming_the_field(form: str) -> None:
    """What the act and the verifier receive is the task as submitted: a value that would
    arrive as something else after its trip through JSON is refused, at its field."""

    def plan(params: object = (), value: object = 3) -> list[dict[str, object]]:
        probe = {**RECORD["probe"], "params": params}  # type: ignore[dict-item]
        return [{**RECORD, "probe": probe, "expect": {"type": "equals", "value": value}}]

    def given(**over: object) -> object:
        data = spec(**over)
        return data if form == "mapping" else TaskSpec.model_validate(data)

    def act(value: object) -> dict[str, object]:
        return {"name": "sql.execute", "input": {"v": value}}

    cases = [
        (given(act=act(Decimal("1.10"))), "act.input.v", 'a value of type Decimal'),
        (given(act=act(dt.datetime(2026, 1, 1))), "act.input.v", "type datetime"),
        (given(act=act({1, 2})), "act.input.v", "would arrive as the list [1,2]"),
        (given(act=act(b"abc")), "act.input.v", "type bytes"),
        (given(act=act(uuid.UUID(int=7))), "act.input.v", "type UUID"),
        (given(act=act({"a": {2: "x"}})), "act.input.v.a.2", "the key 2 is of type int"),
        (given(act=act([1, object()])), "act.input.v.1", "cannot be written as JSON"),
        (given(proof_plan=plan(params=[Decimal("2")])), "proof_plan.0.probe.params.0", "Decimal"),
        (given(proof_plan=plan(value=Decimal("3"))), "proof_plan.0.expect.value", "Decimal"),
    ]  # fmt: skip
    for data, field, says in cases:
        with pytest.raises(TaskSpecError) as caught:
            check_spec(data)  # type: ignore[arg-type]
        assert [f for f, _ in caught.value.problems] == [field], caught.value.problems
        assert says in caught.value.problems[0][1], caught.value.problems
    # JSON data passes unchanged; a tuple is a JSON list, an enum member its plain value.
    same = {"n": [1, 2.5, "x", None, True, {"k": False}], "t": (1, 2), "c": _Colour.RED}
    checked = check_spec(given(act=act(same))).spec  # type: ignore[arg-type]
    assert checked.act.input["v"] == {
        "n": [1, 2.5, "x", None, True, {"k": False}],
        "t": [1, 2],
        "c": "red",
    }
    assert type(checked.act.input["v"]["c"]) is str


def test_a_spec_built_in_code_nested_too_deeply_is_an_invalid_spec() -> None:
    """A mapping handed to check_spec (not JSON text) nested past what JSON can write: a clear
    error, never a RecursionError."""
    for depth, wrap in ((50_000, lambda v: {"a": v}), (300, lambda v: [v])):
        value: object = 1
        for _ in range(depth):
            value = wrap(value)
        with pytest.raises(TaskSpecError) as caught:
            check_spec(spec(act={"name": "sql.execute", "input": {"v": value}}))
        assert caught.value.problems == [
            ("(document)", "nested too deeply to write as JSON; a task spec is a flat object")
        ]


def test_time_cap_error_names_the_field() -> None:
    for bad in (0.1, 86400 * 8):
        with pytest.raises(TaskSpecError) as err:
            check_spec(spec(time_cap=bad))
        assert [field for field, _ in err.value.problems] == ["time_cap"]
        assert "between 1 second and 7 days" in err.value.problems[0][1]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\x80\x81garbage\xff\x00", "not UTF-8 JSON text"),
        (b"\xff\xfe\x00\x81garbage\x80", "not JSON"),  # reads as UTF-16: not JSON either
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
    ],
)
def test_binary_or_deeply_nested_input_is_an_invalid_spec(data: bytes, needle: str) -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(data)
    assert err.value.problems[0][0] == "(document)" and needle in err.value.problems[0][1]


def _submit_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    landed = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "landed")
    return subprocess.run(
        [landed, "submit", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_submit_exits_3_on_garbage_and_1_when_temporal_is_unreachable(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\xff\xfe\x00\x81garbage\x80")
    nested = tmp_path / "nested.json"
    nested.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    for path in (garbage, nested):
        done = _submit_cli(str(path))
        assert done.returncode == 3, done.stderr
        assert "Traceback" not in done.stderr and "invalid task spec" in done.stderr
    good = tmp_path / "task.json"
    good.write_text(json.dumps(spec()))
    done = _submit_cli(str(good), "--address", "127.0.0.1:1")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "cannot reach Temporal" in done.stderr
    # --json answers on stdout whatever happened: one object naming the error.
    done = _submit_cli(str(good), "--address", "127.0.0.1:1", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"] == "Temporal unreachable", done.stdout
    done = _submit_cli(str(tmp_path / "missing.json"), "--json")
    assert done.returncode == 3
    answer = json.loads(done.stdout)
    assert answer["error"] == "unreadable task file" and "missing.json" in answer["message"]


def test_submit_names_a_request_temporal_refuses(temporal_dev: str, tmp_path: Path) -> None:
    good = tmp_path / "task.json"
    good.write_text(json.dumps(spec()))
    done = _submit_cli(str(good), "--address", temporal_dev, "--namespace", "no-such-namespace")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "Temporal refused the request (NOT_FOUND" in done.stderr  # an RPCError, named


async def test_submit_exits_3_when_the_task_id_belongs_to_another_task(
    temporal_dev: str, tmp_path: Path
) -> None:
    """The same spec again attaches (exit 0, "already submitted"); another spec under the id is
    refused with exit 3 and says why. No runner polls the queue: the first run stays open."""
    queue = f"nobody-{os.getpid()}-{tmp_path.name}"
    task_id = f"owned-{tmp_path.name}"
    first, other = tmp_path / "first.json", tmp_path / "other.json"
    first.write_text(json.dumps(spec(task_id=task_id)))
    other.write_text(json.dumps(spec(task_id=task_id, outcome="something else entirely")))
    # No runner answers the role check either: start without it.
    common = ("--address", temporal_dev, "--task-queue", queue, "--no-role-check")
    try:
        assert _submit_cli(str(first), *common).returncode == 0
        again = _submit_cli(str(first), *common)
        assert again.returncode == 0 and "already submitted" in again.stdout, again.stderr
        refused = _submit_cli(str(other), *common, "--json")
        assert refused.returncode == 3, refused.stderr
        answer = json.loads(refused.stdout)
        assert answer["error"] == "task id reused" and "its own task_id" in answer["message"]
    finally:
        client = await Client.connect(temporal_dev)
        await client.get_workflow_handle(task_id).terminate("test over")


async def test_ctrl_c_while_submit_waits_answers_in_json_and_the_task_runs_on(
    temporal_dev: str, tmp_path: Path
) -> None:
    """Ctrl-C during ``submit --wait --json`` still gives one JSON object, exit 130, and says the
    started task runs on (no runner polls the queue, so it never settles by itself)."""
    import signal

    queue = f"nobody-{os.getpid()}-{tmp_path.name}"
    task_id = f"waited-{tmp_path.name}"
    task = tmp_path / "task.json"
    task.write_text(json.dumps(spec(task_id=task_id)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    landed = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "landed")
    args = [landed, "submit", str(task), "--wait", "--json", "--no-role-check"]
    proc = subprocess.Popen(
        [*args, "--address", temporal_dev, "--task-queue", queue],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    client = await Client.connect(temporal_dev)
    handle = client.get_workflow_handle(task_id)
    try:
        for _ in range(300):  # until the workflow exists: the submission is waiting on it
            try:
                await handle.describe()
                break
            except RPCError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("submit never started the task")
        await asyncio.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, (proc.returncode, stdout, stderr)
        answer = json.loads(stdout)
        assert answer["error"] == "interrupted" and task_id in answer["message"], answer
        assert "runs on" in answer["message"] and "Traceback" not in stderr, stderr
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        await handle.terminate("test over")


def test_every_model_is_complete_at_import() -> None:
    """A model whose field types are not all defined when it is created has no validator until
    something rebuilds it, and a TypeAdapter of it builds one again each time: the runner's
    converter makes a TypeAdapter per workflow run, so that cost (about a millisecond) would be
    paid by every task. Define a model's field types before it."""
    import importlib
    import inspect
    import pkgutil

    from pydantic import BaseModel

    import landed

    incomplete = []
    for info in pkgutil.iter_modules(landed.__path__):
        if not info.name.startswith("_") or info.name.startswith("__"):
            continue  # landed's core modules (``__main__`` would run the CLI)
        module = importlib.import_module(f"landed.{info.name}")
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseModel)
                and obj.__module__ == module.__name__
                and not obj.__pydantic_complete__
            ):
                incomplete.append(f"{module.__name__}.{name}")
    assert incomplete == []


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"timeouts": {"settle": 0}}, "timeouts.settle"),
        ({"timeouts": {"verify": -1}}, "timeouts.verify"),
        ({"timeouts": {"act_heartbeat": 0.5}}, "timeouts.act_heartbeat"),
        ({"timeouts": {"verify_heartbeat": 1e12}}, "timeouts.verify_heartbeat"),
        ({"retry": {"verify_backoff": -1}}, "retry.verify_backoff"),
        ({"retry": {"verify_backoff": 1e9}}, "retry.verify_backoff"),
    ],
)
def test_a_step_timeout_or_backoff_the_workflow_cannot_schedule_is_refused_at_submit(
    over: dict[str, object], field: str
) -> None:
    """Zero or negative, Temporal refuses the step only once the workflow schedules it (after
    the act may have run), and the task would never settle."""
    with pytest.raises(TaskSpecError) as err:
        check_spec(spec(**over))
    assert field in {f for f, _ in err.value.problems}, err.value.problems


def test_a_read_longer_than_the_time_cap_is_warned_about() -> None:
    check = check_spec(spec(time_cap=5, timeouts={"verify": 60}))
    assert any("timeouts.verify" in w and "time_cap" in w for w in check.warnings)
    assert check_spec(spec(retry={"verify_backoff": 0})).warnings == []


async def test_submit_to_a_namespace_without_landeds_search_attributes_says_so(
    temporal_dev: str, tmp_path: Path
) -> None:
    """Not "Temporal unreachable": the server answered, the namespace is not set up."""
    from google.protobuf.duration_pb2 import Duration
    from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest

    bare = f"bare-{os.getpid()}-{tmp_path.name[-6:]}".replace("_", "-")
    client = await Client.connect(temporal_dev)
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=bare, workflow_execution_retention_period=Duration(seconds=86400)
        )
    )
    good = tmp_path / "task.json"
    good.write_text(json.dumps(spec()))
    # No runner serves this namespace: the role check would refuse first (naming the runner);
    # off, the start itself meets the namespace's missing search attributes.
    where = ("--address", temporal_dev, "--namespace", bare, "--json", "--no-role-check")
    done = _submit_cli(str(good), *where)
    for _ in range(50):  # a new namespace takes a moment to be served
        if "not found" not in done.stdout.lower():
            break
        await asyncio.sleep(0.2)
        done = _submit_cli(str(good), *where)
    assert done.returncode == 1, done.stderr
    answer = json.loads(done.stdout)
    assert answer["error"] == "namespace not ready", answer
    assert "search attribute" in answer["message"]


def test_submit_json_names_an_invalid_spec_with_a_message_and_each_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spec(task_id="")))
    done = _submit_cli(str(bad), "--json")
    assert done.returncode == 3
    answer = json.loads(done.stdout)
    assert answer["error"] == "invalid task spec" and "task_id" in answer["message"]
    assert answer["problems"][0]["field"] == "task_id"
    assert "task_id" in done.stderr


@pytest.mark.parametrize(
    "cost",
    [{"usd": -0.01}, {"input_tokens": -5}, {"output_tokens": -1}, {"usd": float("nan")}],
)
def test_an_act_report_of_a_negative_or_unreal_cost_is_refused(cost: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="report what the act spent"):
        ActReport(claimed_status="done", cost=cost)  # type: ignore[arg-type]
    assert ActReport(claimed_status="done", cost={"usd": 0, "input_tokens": 10**30}).cost.usd == 0  # type: ignore[arg-type]


def test_a_task_too_large_for_its_receipt_is_refused_at_submit() -> None:
    # The receipt repeats the outcome and the target beside the evidence and must fit in one
    # Temporal payload: a 1 MB target passed submit, acted, and then could never settle.
    spec = {
        "task_id": "big-target",
        "owner": "a",
        "outcome": "o",
        "target": "orders-db: orders " + "x" * 1_050_000,
        "act": {"name": "x"},
    }
    with pytest.raises(TaskSpecError, match="a task may hold"):
        check_spec(spec)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_number_json_cannot_carry_is_refused_at_submit(number: str) -> None:
    # The data converter sends each as null: the act would run another task than submitted.
    text = (
        '{"task_id": "t", "owner": "a", "outcome": "o", "target": "t", '
        f'"act": {{"name": "x", "input": {{"v": {number}}}}}}}'
    )
    with pytest.raises(TaskSpecError, match="NaN, Infinity or a number too large"):
        check_spec(text)
    with pytest.raises(TaskSpecError, match="NaN, Infinity"):
        check_spec(json.loads(text))
