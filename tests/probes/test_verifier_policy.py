"""The verifier worker runs a task's probes only as its own configuration allows, and never lets
its signing key reach evidence. Real subprocesses, real files, a real key file on disk."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from landed.activities.verify import VerifyActivities
from landed.probes.contract import Contract, Outcome
from landed.probes.policy import refusal
from landed.probes.settings import LandedSettings, SourceConfig
from landed.probes.sources import SourceRegistry
from landed.receipts.grading import Grade
from landed.receipts.model import ProofItem
from landed.signing import KeyPair, redact_key
from landed.task.messages import VerifyInput, VerifyOutput


@pytest.fixture
def key_file(tmp_path: Path) -> tuple[KeyPair, Path]:
    key = KeyPair.generate()
    private, _public = key.save(tmp_path / "keys")
    return key, private


def _pem_body(key: KeyPair) -> str:
    lines = key.private_pem().decode().splitlines()
    return "".join(line for line in lines if "-----" not in line)


@pytest.fixture
async def verifier(
    tmp_path: Path, key_file: tuple[KeyPair, Path]
) -> AsyncIterator[tuple[VerifyActivities, SourceRegistry]]:
    key, private = key_file
    root = tmp_path / "root"
    root.mkdir()
    (root / "report.txt").write_text("45 rows\n")
    (root / "escape").symlink_to(private)
    sources: dict[str, Any] = {
        # A command source that pins what it runs, one that allows anything, a file root.
        "tools": {"kind": "command", "path": str(tmp_path), "commands": ["echo *", "git status"]},
        # Exactly `git log` and `git log --oneline -1`; printf with any words added.
        "logs": {
            "kind": "command",
            "path": str(tmp_path),
            "commands": ["git log", "git log --oneline -1", "printf *"],
        },
        "anything": {"kind": "command", "path": str(tmp_path), "allow_any_command": True},
        "reports": {"kind": "file", "path": str(root)},
        "site": {"url": "http://127.0.0.1:9/base"},
    }
    # allow_unsourced=True lets the observe() layer through on purpose: the verifier's own
    # policy must refuse regardless of that flag.
    async with SourceRegistry(sources, allow_unsourced=True, observer="verifier@t") as registry:
        redact_key(registry, key, private)
        yield VerifyActivities(registry, "verifier@t", key), registry


async def _read(
    activities: VerifyActivities, *contracts: dict[str, Any] | Contract, steps: bool = False
) -> VerifyOutput:
    """Every contract read back for task t, run run-1; ``steps``: each signed as step i of n."""
    models = [
        c if isinstance(c, Contract) else Contract.model_validate({"action": "a", **c})
        for c in contracts
    ]
    return await activities._verify(
        VerifyInput(
            task_id="t",
            attempt=1,
            phase="after",
            contracts=models,
            indexes=list(range(len(models))),
            run_id="run-1",
            steps=len(models) if steps else None,
        )
    )


def _cmd(argv: list[str], source: str | None = None, **kw: Any) -> dict[str, Any]:
    probe: dict[str, Any] = {"kind": "command", "argv": argv, **kw}
    if source is not None:
        probe["source"] = source
    return {"probe": probe, "expect": {"type": "non_empty"}}


async def test_task_commands_that_read_the_key_or_parent_env_never_run(
    verifier: tuple[VerifyActivities, SourceRegistry],
    key_file: tuple[KeyPair, Path],
    tmp_path: Path,
) -> None:
    key, private = key_file
    ran = tmp_path / "ran"
    attacks = [
        # The review's reproduction: the parent's environment holds the key path or PEM.
        _cmd([f"touch {ran}; tr '\\0' '\\n' < /proc/$PPID/environ | rev"], shell=True),
        _cmd(["sh", "-c", f"touch {ran}; cat {private}"]),
        _cmd(["cat", str(private)], source="tools"),  # a pinned source: cat is not listed
        _cmd([f"touch {ran}; cat {private}"], source="tools", shell=True),
        _cmd(["echo", "x"], source="tools", env={"LD_PRELOAD": str(tmp_path / "evil.so")}),
        _cmd(["echo", "x"], source="tools", cwd="/"),
        _cmd(["cat", str(private)], source="reports"),  # not a command source
        {"probe": {"kind": "file", "path": str(private)}, "expect": {"type": "non_empty"}},
        {"probe": {"kind": "git", "ref": "HEAD"}, "expect": {"type": "non_empty"}},
    ]
    out = await _read(verifier[0], *attacks)
    assert not ran.exists(), "a refused command ran anyway"
    assert len(out.readings) == len(attacks)
    for reading in out.readings:
        assert reading.refused, reading.observation.message
        assert reading.observation.outcome is Outcome.PROBE_ERROR
        assert reading.proof.result == "probe-error"
        assert reading.observation.message.startswith("refused: ")
    text = out.model_dump_json()
    assert _pem_body(key) not in text
    messages = [r.observation.message for r in out.readings]
    assert "LANDED_SOURCES__NAME__" in messages[0]  # names the configuration to add
    assert "LANDED_SOURCES__TOOLS__COMMANDS" in messages[2]
    assert "allow_any_command" in messages[3]


async def test_allowed_commands_run_and_the_key_never_reaches_evidence(
    verifier: tuple[VerifyActivities, SourceRegistry], key_file: tuple[KeyPair, Path]
) -> None:
    key, private = key_file
    out = await _read(
        verifier[0],
        {**_cmd(["echo", "45"], source="tools"), "expect": {"type": "count", "value": 45}},
        # The operator allowed any command here; even then the key is redacted, whole or by line.
        _cmd(["cat", str(private)], source="anything"),
        _cmd([f"echo {private}; grep -v -- ----- {private}"], source="anything", shell=True),
    )
    echo, whole, lines = out.readings
    assert not echo.refused and echo.observation.outcome is Outcome.PASS
    for reading in (whole, lines):
        assert not reading.refused
        evidence = reading.observation.evidence
        assert evidence is not None and "[redacted]" in evidence.text
        assert _pem_body(key) not in evidence.text
        assert str(private) not in evidence.text
    assert _pem_body(key) not in out.model_dump_json()
    # (The probe itself names the path, as the task wrote it; what was observed never does.)
    assert all(str(private) not in r.observation.model_dump_json() for r in out.readings)


async def test_a_listed_command_runs_exactly_as_listed_unless_it_ends_in_a_star(
    verifier: tuple[VerifyActivities, SourceRegistry], tmp_path: Path
) -> None:
    written = tmp_path / "written"
    # A real repository, so that an allowed git log with --output would write the file.
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(tmp_path)}
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.test"]
    for args in (["init", "-q"], [*ident, "commit", "-q", "--allow-empty", "-m", "first"]):
        subprocess.run(["git", *args], cwd=tmp_path, env=env, check=True)
    hook = f"touch {written}"
    out = await _read(
        verifier[0],
        # Words added to an exact entry, with a dash or without one (git config would make the
        # next git status run the hook; dd and tar take options with no dash).
        _cmd(["git", "log", f"--output={written}"], source="logs"),
        _cmd(["git", "log", "--oneline"], source="logs"),
        _cmd(["git", "config", "core.fsmonitor", hook], source="logs"),
        _cmd(["git", "status", "--porcelain"], source="tools"),
        # Listed exactly, or under an entry ending in a star: these run.
        {**_cmd(["git", "log"], source="logs"), "expect": {"type": "contains", "value": "first"}},
        {
            **_cmd(["git", "log", "--oneline", "-1"], source="logs"),
            "expect": {"type": "contains", "value": "first"},
        },
        {
            **_cmd(["printf", "--", "%s", "7"], source="logs"),
            "expect": {"type": "count", "value": 7},
        },
        {**_cmd(["echo", "-n", "45"], source="tools"), "expect": {"type": "count", "value": 45}},
    )
    *refused, log, oneline, printf, echo = out.readings
    assert not written.exists(), "a refused command ran anyway"
    for reading in refused:
        assert reading.refused, reading.observation.message
        assert reading.observation.outcome is Outcome.PROBE_ERROR
    added = [r.observation.message for r in refused]
    assert f"allows 'git log' exactly, and this probe adds '--output={written}'" in added[0]
    assert "' *'" in added[0] and "LANDED_SOURCES__LOGS__COMMANDS" in added[0]
    assert "allows 'git log' exactly" in added[1]  # the longer entry is -1 too, not this
    assert "does not allow the command 'git'" in added[2]
    assert "allows 'git status' exactly" in added[3]
    for reading in (log, oneline, printf, echo):
        assert reading.observation.outcome is Outcome.PASS, reading.observation.message


async def test_a_probe_the_policy_cannot_check_is_refused_not_a_crash(
    verifier: tuple[VerifyActivities, SourceRegistry], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(probe: object, registry: object) -> str | None:
        raise ValueError("embedded null byte")

    monkeypatch.setattr("landed.probes.policy.refusal", broken)
    out = await _read(verifier[0], _cmd(["echo", "x"], source="tools"))
    (reading,) = out.readings
    assert reading.refused and reading.observation.outcome is Outcome.PROBE_ERROR
    assert "could not check this probe" in reading.observation.message
    assert "embedded null byte" in reading.observation.message


def test_only_a_bare_trailing_star_lets_words_follow() -> None:
    registry = SourceRegistry(
        {
            "finder": {
                "kind": "command",
                "commands": ["find . -name '*'", "ls \\*", "grep -c x *"],
            }
        }
    )

    def allowed(*argv: str) -> bool:
        probe = Contract.model_validate({"action": "a", **_cmd(list(argv), source="finder")}).probe
        return refusal(probe, registry) is None

    # A quoted or escaped star is the argument *, as the shell would pass it.
    assert allowed("find", ".", "-name", "*")
    assert not allowed("find", ".", "-name", "x", "-delete")
    assert not allowed("find", ".", "-name", "*", "-exec", "sh", "-c", "id", ";")
    assert allowed("ls", "*") and not allowed("ls", "*", "/etc")
    assert allowed("grep", "-c", "x", "a.txt", "b.txt")


def test_an_allowed_command_that_cannot_be_split_is_a_configuration_error() -> None:
    for entry, message in (
        ("grep 'x", "cannot be split"),
        ("*", "names no program"),
        ("", "names no program"),
    ):
        with pytest.raises(ValidationError, match=message):
            SourceConfig(kind="command", commands=["echo", entry])


async def test_a_cwd_that_leaves_the_source_through_a_symlink_is_refused(
    verifier: tuple[VerifyActivities, SourceRegistry], tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "out").symlink_to("/")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "current").symlink_to(tmp_path / "sub")  # inside, but a link all the same
    out = await _read(
        verifier[0],
        {
            **_cmd(["echo", "45"], source="tools", cwd="sub"),
            "expect": {"type": "count", "value": 45},
        },
        _cmd(["echo", "x"], source="tools", cwd="out"),
        _cmd(["echo", "x"], source="tools", cwd="out/etc"),
        _cmd(["echo", "x"], source="tools", cwd="loop"),
        _cmd(["echo", "x"], source="tools", cwd="current"),
    )
    inside, *outside = out.readings
    assert inside.observation.outcome is Outcome.PASS, inside.observation.message
    for reading in outside:
        assert reading.refused, reading.observation.message
        assert "not a real directory below source 'tools'" in reading.observation.message


async def test_http_without_a_source_and_absolute_urls_off_base_are_refused(
    verifier: tuple[VerifyActivities, SourceRegistry],
) -> None:
    out = await _read(
        verifier[0],
        {"probe": {"kind": "http", "url": "http://127.0.0.1:9/x"}, "expect": {"type": "non_empty"}},
        {
            "probe": {"kind": "http", "source": "site", "url": "http://127.0.0.1:9/other"},
            "expect": {"type": "non_empty"},
        },
    )
    unsourced, off_base = out.readings
    assert unsourced.refused and "allow_absolute_urls" in unsourced.observation.message
    # Named a source, but the URL leaves its base: the reader refuses it (nothing fetched).
    assert off_base.refused and off_base.observation.outcome is Outcome.PROBE_ERROR
    assert "allow_absolute_urls" in off_base.observation.message


async def test_file_probes_stay_inside_their_source_root(
    verifier: tuple[VerifyActivities, SourceRegistry], key_file: tuple[KeyPair, Path]
) -> None:
    key, _private = key_file
    out = await _read(
        verifier[0],
        {
            "probe": {"kind": "file", "source": "reports", "path": "report.txt"},
            "expect": {"type": "contains", "value": "45 rows"},
        },
        {
            "probe": {"kind": "file", "source": "reports", "path": "escape"},
            "expect": {"type": "non_empty"},
        },
        {
            "probe": {"kind": "file", "source": "reports", "path": "../keys"},
            "expect": {"type": "non_empty"},
        },
    )
    inside, symlink, climb = out.readings
    assert inside.observation.outcome is Outcome.PASS
    for reading in (symlink, climb):
        assert reading.observation.outcome is Outcome.PROBE_ERROR
        assert "outside the source's root" in reading.observation.message
    assert _pem_body(key) not in out.model_dump_json()


def test_settings_read_only_configured_sources_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LANDED_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(Path(__file__).parent)  # no landed.toml here
    assert LandedSettings().allow_unsourced is False
    assert SourceRegistry.from_settings().allow_unsourced is False
    assert SourceRegistry.from_settings(allow_unsourced=True).allow_unsourced is True


async def test_a_reading_that_cannot_be_signed_is_a_signed_probe_error(
    verifier: tuple[VerifyActivities, SourceRegistry], tmp_path: Path
) -> None:
    # A value of more than 64 bits has no signed form: the read proves nothing, and the verify
    # step says so instead of failing on every retry.
    activities, _ = verifier
    big = 123456789012345678901234567890
    (tmp_path / "root" / "order.json").write_text(f'{{"order_id": {big}}}')
    out = await _read(
        activities,
        {
            "probe": {"kind": "file", "source": "reports", "path": "order.json"},
            "expect": {"type": "json_path", "path": "$.order_id", "value": big},
        },
    )
    reading = out.readings[0]
    assert reading.observation.outcome is Outcome.PROBE_ERROR
    assert "cannot be signed" in (reading.observation.message or "")
    assert (reading.proof.landed or {}).get("signature")


async def test_readings_are_signed_only_for_the_workflow_of_their_task(
    verifier: tuple[VerifyActivities, SourceRegistry],
) -> None:
    # Anyone with a workflow on the verifier's queue could otherwise get a genuine signed pass
    # under another task's id and run, which `landed check --trust` grades P3.
    import dataclasses

    from temporalio.exceptions import ApplicationError
    from temporalio.testing import ActivityEnvironment

    activities, _ = verifier
    contract = Contract.model_validate(
        {
            "action": "a",
            "probe": {"kind": "file", "source": "reports", "path": "report.txt"},
            "expect": {"type": "contains", "value": "45 rows"},
        }
    )
    ask = VerifyInput(
        task_id="victim-task", attempt=1, phase="after", contracts=[contract], indexes=[0]
    )
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id="agents-own-workflow")
    with pytest.raises(ApplicationError, match="signs readings only for the workflow"):
        await env.run(activities.verify, ask)
    env.info = dataclasses.replace(env.info, workflow_id="victim-task")
    out = await env.run(activities.verify, ask)
    assert out.readings[0].observation.outcome is Outcome.PASS


def _orders_db(tmp_path: Path) -> Path:
    """45 order rows of batch 123 and an empty audit table."""
    import sqlite3

    db = tmp_path / "orders.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table orders (batch int)")
        conn.execute("create table audit (batch int)")
        conn.executemany("insert into orders values (?)", [(123,)] * 45)
    return db


def _count_step(table: str, count: int) -> Contract:
    return Contract.model_validate(
        {
            "action": table,
            "probe": {
                "kind": "record",
                "source": "orders-db",
                "query": f"select count(*) from {table} where batch = 123",
            },
            "expect": {"type": "count", "value": count},
        }
    )


async def _read_plan(activities: VerifyActivities, plan: list[Contract]) -> list[ProofItem]:
    """Every step of ``plan`` read back and signed as step i of len(plan)."""
    return [r.proof for r in (await _read(activities, *plan, steps=True)).readings]


def _graded(proofs: list[ProofItem], key: KeyPair) -> Grade:
    """The grade, with the verifier's key trusted, of a done claim resting on ``proofs``."""
    from landed.receipts.grading import grade
    from landed.receipts.model import LandedExtension, Receipt
    from landed.signing import TrustStore

    receipt = Receipt(
        task_id="t",
        owner="agent-a",
        claimed_status="done",
        report="inserted 45 rows and the rest",
        proof=proofs,
        landed=LandedExtension(attempt=1, run_id="run-1"),
    )
    return grade(receipt, signature_ok=TrustStore([key.public_key]).signature_ok)


async def test_a_receipt_missing_one_steps_signed_read_back_proves_only_part(
    tmp_path: Path,
) -> None:
    # Each reading signs its plan step and the plan's length: the failing step's reading taken
    # out of the receipt (and the runner's verdict with it) leaves the passing one short of P3.
    import sqlite3

    db = _orders_db(tmp_path)
    plan = [_count_step("orders", 45), _count_step("audit", 1)]
    key = KeyPair.generate()
    async with SourceRegistry(
        {"orders-db": {"url": f"sqlite:///{db}"}}, observer="verifier@t"
    ) as registry:
        activities = VerifyActivities(registry, "verifier@t", key)
        proofs = await _read_plan(activities, plan)
        assert [p.result for p in proofs] == ["pass", "empty"]
        whole, cut = _graded(proofs, key), _graded(proofs[:1], key)
        assert whole.proof_level.name == "P2" and not whole.meets_bar, whole.findings
        assert cut.proof_level.name == "P2" and not cut.meets_bar, cut.findings
        assert any("no verified signed read-back shows step 2" in f.message for f in cut.findings)
        # Every step read back and passing: P3, as before.
        with sqlite3.connect(db) as conn:
            conn.execute("insert into audit values (123)")
        done = _graded(await _read_plan(activities, plan), key)
        # The missing step's place taken by a genuine pass signed for a one-step plan of the
        # same task: readings of plans of other lengths are not one plan's read-backs.
        alone = await _read_plan(activities, plan[:1])
        mixed = _graded([proofs[0], alone[0]], key)
    assert done.proof_level.name == "P3" and done.meets_bar, done.findings
    assert mixed.proof_level.name == "P2" and not mixed.meets_bar, mixed.findings
    assert any("plans of 2 and 1 steps" in f.message for f in mixed.findings), mixed.findings


async def test_a_plan_with_an_artifact_step_still_proves_its_read_back(tmp_path: Path) -> None:
    # A file step is an artifact, a command step an assertion: signed, each counts as present.
    db = _orders_db(tmp_path)
    (tmp_path / "report.txt").write_text("45 rows\n")
    report = Contract.model_validate(
        {
            "action": "report",
            "probe": {"kind": "file", "source": "reports", "path": "report.txt"},
            "expect": {"type": "contains", "value": "45 rows"},
        }
    )
    key = KeyPair.generate()
    sources = {
        "orders-db": {"url": f"sqlite:///{db}"},
        "reports": {"kind": "file", "path": str(tmp_path)},
    }
    async with SourceRegistry(sources, observer="verifier@t") as registry:
        activities = VerifyActivities(registry, "verifier@t", key)
        proofs = await _read_plan(activities, [_count_step("orders", 45), report])
    graded = _graded(proofs, key)
    assert graded.proof_level.name == "P3" and graded.meets_bar, graded.findings


async def test_a_failing_command_step_keeps_the_task_from_p3_and_bad_probes_are_refused(
    verifier: tuple[VerifyActivities, SourceRegistry],
) -> None:
    # A command step is neither a read-back nor an artifact: signed, and failing, it is still
    # part of the outcome, so the passing read-back beside it proves only part (as the workflow
    # grades it). A probe that cannot be read as given is refused (never re-read).
    from landed.receipts.grading import grade
    from landed.receipts.model import LandedExtension, Receipt
    from landed.signing import TrustStore

    activities, _ = verifier
    plan = [
        Contract.model_validate(c)
        for c in (
            {
                "action": "report",
                "probe": {"kind": "http", "source": "site", "url": "/x"},
                "expect": {"type": "contains", "value": "x"},
            },
            {
                "action": "check",
                **_cmd(["echo", "no"], source="tools"),
                "expect": {"type": "contains", "value": "yes"},
            },
            {
                "action": "pay",
                "probe": {"kind": "payment", "source": "site", "payment_id": "p", "path": "/p"},
                "expect": {"type": "non_empty"},
            },
        )
    ]
    out = await _read(activities, *plan, steps=True)
    assert out.readings[2].refused and "must hold {id}" in (
        out.readings[2].observation.message or ""
    )
    assert out.readings[1].proof.result == "mismatch"
    # The read-back as if it had passed, signed as the verifier would have: only the command
    # step (and the refused one) stand between it and P3.
    key = activities._key
    assert key is not None
    from landed.signing import sign_proof

    passing = out.readings[0].observation.model_copy(update={"outcome": Outcome.PASS})
    item = out.readings[0].proof.model_copy(update={"result": "pass", "landed": None})
    item = sign_proof(
        key, task_id="t", attempt=1, proof=item, observation=passing, run_id="run-1", step=0,
        steps=3,
    )  # fmt: skip
    receipt = Receipt(
        task_id="t",
        owner="agent-a",
        claimed_status="done",
        report="done",
        proof=[item, out.readings[1].proof],
        landed=LandedExtension(attempt=1, run_id="run-1"),
    )
    graded = grade(receipt, signature_ok=TrustStore([key.public_key]).signature_ok)
    assert graded.proof_level.name == "P2" and not graded.meets_bar, graded.findings
    assert any("did not read back as a pass" in f.message for f in graded.findings)


@pytest.mark.parametrize(
    ("probe", "why"),
    [
        ({"kind": "http", "source": "site", "url": "https://elsewhere.example/x"}, "absolute"),
        ({"kind": "http", "source": "site", "url": "/base/../admin"}, "climbs out"),
        (
            {"kind": "provider_object", "source": "site", "path": "/../x/{id}", "object_id": "1"},
            "climbs out",
        ),
    ],
)
async def test_a_probe_the_sources_url_policy_refuses_is_refused_not_read(
    verifier: tuple[VerifyActivities, SourceRegistry], probe: dict[str, Any], why: str
) -> None:
    """The URL policy's answer is the same on every read: the verifier refuses the probe before
    reading it (a refusal is never read again), instead of returning a probe-error that the
    workflow would read three times per phase."""
    activities, registry = verifier
    contract = {"probe": probe, "expect": {"type": "count", "value": 1}}
    assert (reason := refusal(Contract.model_validate({"action": "a", **contract}).probe, registry))
    assert reason.startswith("refused:") and why in reason
    out = await _read(activities, contract)
    (reading,) = out.readings
    assert reading.refused and reading.observation.outcome == "probe-error"
    assert why in reading.observation.message
