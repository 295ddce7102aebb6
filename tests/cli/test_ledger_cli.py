"""The ledger and key commands as real subprocesses: keys, board, receipts export, check --trust."""

from __future__ import annotations

import hashlib
import json
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from landed.cli.sample import sample_bytes
from landed.ledger.factory import open_ledger
from landed.probes.contract import Evidence, Observation, Outcome
from landed.receipts.model import LandedExtension, ProofItem, Receipt
from landed.signing import KeyPair, sign_proof

AT = datetime(2026, 11, 7, 1, 0, tzinfo=UTC)


def landed(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("landed")
    return subprocess.run(
        [str(exe), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def settled(
    key: KeyPair, task_id: str, outcome: Outcome, value: int, *, attempt: int = 1
) -> Receipt:
    """A receipt as settle writes it: the verifier's signed observation on a record read-back."""
    obs = Observation(
        outcome=outcome,
        expectation="count(45)",
        kind="record",
        source="orders-db",
        observer="verifier",
        observed_at=AT,
        duration_ms=4.0,
        evidence=Evidence(text=str(value), total_bytes=2, sha256=hashlib.sha256(b"x").hexdigest()),
        value=value,
    )
    proof = ProofItem(
        kind="record",
        ref="orders-db:select count(*) from orders where batch = 123",
        expect="count(45)",
        checked_by="verifier",
        checked_at=AT,
        result=str(outcome),
    )
    done = outcome is Outcome.PASS
    return Receipt(
        task_id=task_id,
        owner="agent-a",
        outcome="45 rows for batch 123 are in the orders table",
        target="orders-db",
        claimed_status="done",
        report="Inserted 45 rows.",
        exit_code=0,
        proof=[sign_proof(key, task_id=task_id, attempt=attempt, proof=proof, observation=obs)],
        verdict="verified" if done else "not done",
        verdict_by="runner",
        settled_at=AT,
        landed=LandedExtension(attempt=attempt, rung="verified" if done else "executed"),
    )


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Any]:
    made = landed("keys", "new", "--out", tmp_path / "keys", "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    info: dict[str, Any] = json.loads(made.stdout)
    return info


@pytest.mark.slow
def test_keys_new_writes_a_0600_private_key_and_prints_its_id(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    private, public = Path(keys["private_key"]), Path(keys["public_key"])
    assert stat.S_IMODE((tmp_path / private).stat().st_mode) == 0o600
    assert KeyPair.load(tmp_path / private).key_id == keys["key_id"]
    shown = landed("keys", "id", public, cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout.strip() == keys["key_id"]
    plain = landed("keys", "new", "--out", "more", cwd=tmp_path)
    assert plain.returncode == 0 and len(plain.stdout.strip()) == 16
    # Errors under --json are one JSON object on stdout too; odd paths print as text.
    for argv in (
        ("keys", "id", "no[such]/x.pub", "--json"),
        ("keys", "new", "--out", "/proc/no[pe]", "--json"),
    ):
        failed = landed(*argv, cwd=tmp_path)
        assert failed.returncode == 3, failed.stderr
        error = json.loads(failed.stdout)
        assert set(error) == {"error", "message"} and "no[" in error["message"]
        assert "Traceback" not in failed.stderr and "no[" in failed.stderr


@pytest.mark.slow
async def test_board_export_and_check_trust_over_a_real_ledger(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    key = KeyPair.load(tmp_path / keys["private_key"])
    public = tmp_path / keys["public_key"]
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    first = settled(key, "insert-rows", Outcome.MISMATCH, 22).model_copy(
        update={"claimed_status": "executed"}
    )
    async with await open_ledger(ledger_url) as ledger:
        await ledger.append(first)
        await ledger.append(settled(key, "insert-rows", Outcome.PASS, 45, attempt=2))
        await ledger.append(settled(key, "publish-page", Outcome.PASS, 45))

    board = landed("board", "--ledger", ledger_url, "--json", cwd=tmp_path)
    assert board.returncode == 0, board.stderr
    rows = {t["task_id"]: t for t in json.loads(board.stdout)["tasks"]}
    assert rows["insert-rows"]["attempt"] == 2 and rows["insert-rows"]["verdict"] == "verified"
    assert rows["publish-page"]["signed_proofs"] == 1
    table = landed("board", "--ledger", ledger_url, cwd=tmp_path)
    assert table.returncode == 0 and "insert-rows" in table.stdout

    exported = landed("receipts", "export", "--ledger", ledger_url, "-o", "r.jsonl", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    lines = (tmp_path / "r.jsonl").read_bytes().splitlines()
    assert len(lines) == 3
    to_stdout = landed("receipts", "export", "--ledger", ledger_url, cwd=tmp_path)
    assert to_stdout.stdout.encode().splitlines() == lines

    checked = landed("check", "r.jsonl", "--trust", public, "--json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    # Attempt 1 observed a mismatch and claimed only "executed": P1 and no done claim to miss.
    assert [(t["task_id"], t["proof_level"]) for t in report["tasks"]] == [
        ("insert-rows", "P1"),
        ("insert-rows", "P3"),
        ("publish-page", "P3"),
    ]


def _tampered(key: KeyPair) -> list[dict[str, Any]]:
    """Five forgeries of a done claim; each passes `landed check` unless signatures are checked."""
    good = settled(key, "publish-page", Outcome.PASS, 45).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    half = settled(key, "half-migration", Outcome.MISMATCH, 22).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )

    # The runner's verdict said not done (DOD-2 keeps it): a forger changes it too.
    half["verdict"] = "verified"

    flipped = json.loads(json.dumps(half))  # the verifier saw 22 rows; the result says pass
    flipped["task_id"] = "result-flipped"
    flipped["proof"][0]["result"] = "pass"

    edited = json.loads(json.dumps(half))  # ... and the observation is edited to match
    edited["task_id"] = "observation-edited"
    edited["proof"][0]["result"] = "pass"
    edited["proof"][0]["landed"]["observation"].update(outcome="pass", value=45)

    moved = json.loads(json.dumps(good))  # a good signed proof copied onto another task
    moved["task_id"] = "signature-moved"

    dropped = json.loads(json.dumps(good))  # a good proof with its signature taken off
    dropped["task_id"] = "signature-dropped"
    assert dropped["proof"][0]["landed"].pop("signature")

    stranger = settled(KeyPair.generate(), "unknown-key", Outcome.PASS, 45)
    return [flipped, edited, moved, dropped, stranger.model_dump(mode="json", by_alias=True)]


@pytest.mark.slow
def test_check_trust_downgrades_tampered_receipts_to_assertions(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    key = KeyPair.load(tmp_path / keys["private_key"])
    path = tmp_path / "forged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _tampered(key)))
    names = {
        "result-flipped",
        "observation-edited",
        "signature-moved",
        "signature-dropped",
        "unknown-key",
    }

    # Without --trust each forgery reads as a P3 done claim: the check has nothing to go on.
    blind = landed("check", path, "--json", cwd=tmp_path)
    assert blind.returncode == 0, blind.stdout + blind.stderr
    assert {
        t["task_id"]: t["proof_level"] for t in json.loads(blind.stdout)["tasks"]
    } == dict.fromkeys(names, "P3")

    trusted = landed("check", path, "--trust", keys["public_key"], "--json", cwd=tmp_path)
    assert trusted.returncode == 1, trusted.stdout + trusted.stderr
    tasks = {t["task_id"]: t for t in json.loads(trusted.stdout)["tasks"]}
    assert set(tasks) == names
    for task in tasks.values():
        assert task["proof_level"] == "P1" and task["meets_bar"] is False
        assert "DOD-2" in {f["rule"] for f in task["findings"]}


@pytest.mark.slow
def test_check_trust_with_a_bad_key_file_is_invalid_input(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    (tmp_path / "r.jsonl").write_text('{"status": "done"}\n')
    missing = landed("check", "r.jsonl", "--trust", "nope.pub", cwd=tmp_path)
    assert missing.returncode == 3 and "cannot read the public key nope.pub" in missing.stderr
    private = landed("check", "r.jsonl", "--trust", keys["private_key"], cwd=tmp_path)
    assert private.returncode == 3 and "is a private key" in private.stderr
    assert "Traceback" not in missing.stderr + private.stderr


@pytest.mark.slow
def test_board_and_export_without_a_ledger_say_so(tmp_path: Path) -> None:
    board = landed("board", cwd=tmp_path)
    assert board.returncode == 3 and "no ledger at .landed/ledger.db" in board.stderr
    export = landed("receipts", "export", "-o", "out.jsonl", cwd=tmp_path)
    assert export.returncode == 3 and not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / ".landed").exists()  # reading never creates a ledger


@pytest.mark.slow
def test_ledger_init_makes_an_empty_file_a_ledger_and_keeps_one_there(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    url = f"sqlite:///{empty}"
    before = landed("board", "--ledger", url, "--json", cwd=tmp_path)
    assert before.returncode == 3 and "landed ledger init" in before.stderr, before.stderr
    assert json.loads(before.stdout)["error"] == "ledger unreadable", before.stdout
    done = landed("ledger", "init", "--ledger", url, "--json", cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout) == {"ledger": url}
    board = landed("board", "--ledger", url, "--json", cwd=tmp_path)
    assert board.returncode == 0 and json.loads(board.stdout)["count"] == 0, board.stderr
    bad = landed("ledger", "init", "--ledger", "mysql://db/x", "--json", cwd=tmp_path)
    assert bad.returncode == 3 and "unknown ledger URL scheme" in bad.stderr, bad.stderr
    assert json.loads(bad.stdout)["error"] == "ledger not created", bad.stdout


def _unsigned(task_id: str, attempt: int, verdict: str, owner: str = "agent-a") -> Receipt:
    """A settled receipt with no proof: enough for what the board and export show."""
    return Receipt(
        task_id=task_id,
        owner=owner,
        claimed_status="done",
        verdict=verdict,
        verdict_by="runner",
        settled_at=datetime(2026, 1, 1, tzinfo=UTC),
        landed=LandedExtension(attempt=attempt),
    )


@pytest.mark.slow
async def test_the_board_shows_user_text_as_text_and_names_a_bad_row(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "l.db"
    url = f"sqlite:///{path}"
    odd = _unsigned("t1", 1, "failed", owner="team[/]bot [bold]x")
    async with await open_ledger(url) as ledger:
        await ledger.append(odd)
    board = landed("board", "--ledger", url, cwd=tmp_path)
    assert board.returncode == 0, board.stderr
    assert "team[/]bot [bold]x" in board.stdout
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO landed_receipts (task_id, attempt, body_sha256, body)"
            " VALUES ('t2', 1, 'x', '{\"task_id\": 1')"
        )
    db.close()
    broken = landed("board", "--ledger", url, "--json", cwd=tmp_path)
    assert broken.returncode == 3, broken.stderr
    assert json.loads(broken.stdout)["error"] == "ledger unreadable"
    assert "row 2 of the ledger" in broken.stderr and "Traceback" not in broken.stderr
    export = landed("receipts", "export", "--ledger", url, "-o", "out.jsonl", cwd=tmp_path)
    assert export.returncode == 3 and "row 2 of the ledger" in export.stderr, export.stderr
    assert not [p.name for p in tmp_path.iterdir() if "out.jsonl" in p.name]  # no temp file left


@pytest.mark.slow
async def test_board_and_export_name_a_forged_row_instead_of_showing_it(tmp_path: Path) -> None:
    """A well-formed receipt appended with a hash that is not its body's (a writer that is not
    landed, or a body edited after it settled) is reported, never shown as settled."""
    import hashlib
    import sqlite3

    from landed.ledger.base import canonical_json

    path = tmp_path / "l.db"
    url = f"sqlite:///{path}"
    async with await open_ledger(url) as ledger:
        await ledger.append(_unsigned("t1", 1, "failed"))
    forged = canonical_json(_unsigned("t2", 1, "verified"))
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO landed_receipts (task_id, attempt, verdict, body_sha256, body)"
            " VALUES ('t2', 1, 'verified', ?, ?)",
            (hashlib.sha256(b"what was settled").hexdigest(), forged.decode()),
        )
    db.close()
    board = landed("board", "--ledger", url, "--json", cwd=tmp_path)
    assert board.returncode == 3, board.stderr
    assert "row 2 of the ledger" in board.stderr and "body_sha256" in board.stderr
    assert "t2" not in board.stdout
    export = landed("receipts", "export", "--ledger", url, cwd=tmp_path)
    assert export.returncode == 3 and "row 2 of the ledger" in export.stderr, export.stderr


@pytest.mark.slow
async def test_export_latest_writes_only_the_attempt_the_board_shows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    async with await open_ledger(url) as ledger:
        for attempt, verdict in ((1, "failed"), (2, "verified")):
            await ledger.append(_unsigned("t1", attempt, verdict))
    every = landed("receipts", "export", "--ledger", url, cwd=tmp_path)
    latest = landed("receipts", "export", "--ledger", url, "--latest", cwd=tmp_path)
    assert every.returncode == 0 and latest.returncode == 0, (every.stderr, latest.stderr)
    assert [json.loads(x)["verdict"] for x in every.stdout.splitlines()] == ["failed", "verified"]
    assert [json.loads(x)["verdict"] for x in latest.stdout.splitlines()] == ["verified"]


@pytest.mark.slow
def test_keys_new_prints_a_path_with_brackets_and_colons_as_written(tmp_path: Path) -> None:
    out_dir = tmp_path / "k[/bold]:rocket:"
    made = landed("keys", "new", "--out", out_dir, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "Traceback" not in made.stderr and str(out_dir) in " ".join(made.stderr.split())


def _to_a_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a command whose reader has already left (``| head`` that exited): every write to
    stdout fails with EPIPE."""
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        exe = Path(sys.executable).with_name("landed")
        return subprocess.run(
            [str(exe), *args], cwd=cwd, stdout=write, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(write)


@pytest.mark.slow
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
async def test_a_report_whose_reader_left_keeps_its_own_exit_code(
    tmp_path: Path, json_flag: list[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    async with await open_ledger(url) as ledger:
        await ledger.append(_unsigned("t1", 1, "verified"))
    # sample exits 1 only when a verdict differs from the expected; board exits 0 when read.
    for args in (["sample", *json_flag], ["board", "--ledger", url, *json_flag]):
        proc = _to_a_closed_pipe(*args, cwd=tmp_path)
        assert proc.returncode == 0, (args, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr
    # An export read only in part is still the reader's choice; a check whose verdicts were not
    # all printed fails closed (exit 1).
    export = _to_a_closed_pipe("receipts", "export", "--ledger", url, cwd=tmp_path)
    assert export.returncode == 0 and "Traceback" not in export.stderr, export.stderr
    sample = tmp_path / "sample.jsonl"
    sample.write_bytes(sample_bytes())
    check = _to_a_closed_pipe("check", str(sample), *json_flag, cwd=tmp_path)
    assert check.returncode == 1 and "Traceback" not in check.stderr, check.stderr


@pytest.mark.slow
async def test_the_board_and_check_count_a_reversal(tmp_path: Path) -> None:
    """A recheck's reversed row is the task's latest on the board, and both the board and
    `landed check` of the export count it."""
    url = f"sqlite:///{tmp_path / 'l.db'}"
    verified = _unsigned("t1", 1, "verified")
    rows = [
        verified.model_copy(update={"landed": LandedExtension.model_validate(ext)})
        for ext in ({"lifecycle": "verified"}, {"lifecycle": "reversed"})
    ]
    rows[1] = rows[1].model_copy(update={"verdict": "reversed"})
    async with await open_ledger(url) as ledger:
        for receipt in [*rows, _unsigned("t2", 1, "verified")]:
            assert await ledger.append(receipt) is True
    board = landed("board", "--ledger", url, "--json", cwd=tmp_path)
    assert board.returncode == 0, board.stderr
    shown = json.loads(board.stdout)
    assert shown["reversed"] == 1
    assert [t["verdict"] for t in shown["tasks"]] == ["reversed", "verified"]
    table = landed("board", "--ledger", url, cwd=tmp_path)
    assert "2 task(s): 1 DONE, 1 NOT DONE; 1 reversed" in table.stdout
    # the reversed task reads NOT DONE on its row, the verified one DONE
    lines = {
        line.split()[1]: line
        for line in table.stdout.splitlines()
        if " t1 " in line or " t2 " in line
    }
    assert "NOT DONE" in lines["t1"] and "NOT DONE" not in lines["t2"] and "DONE" in lines["t2"]
    export = landed("receipts", "export", "--ledger", url, cwd=tmp_path)
    (tmp_path / "r.jsonl").write_text(export.stdout)
    checked = landed("check", tmp_path / "r.jsonl", "--json", cwd=tmp_path)
    card = json.loads(checked.stdout.splitlines()[-1])["scorecard"]
    # Two tasks, as the board shows: t1's settle row and its reversal are one task, not done.
    assert (card["reversed"], card["settled"], card["done_claimed"]) == (1, 2, 2), checked
