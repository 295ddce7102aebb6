"""``landed check`` end to end: exit codes from a real process, the JSON contract, and --live."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from landed import Receipt, grade
from landed.cli import app
from landed.cli.check_sinks import _task_bytes, _task_json
from landed.receipts.check import Record
from landed.receipts.grading import RawGrade
from landed.receipts.ladder import ProofLevel, Status
from landed.signing import KeyPair

LANDED = [sys.executable, "-m", "landed"]
TASK_KEYS = {"task_id", "claimed_status", "proof_level", "meets_bar", "findings"}
CARD_KEYS = {
    "done_claimed",
    "done_proven",
    "proof_rate",
    "held",
    "settled",
    "hold_rate",
    "cost_usd",
    "cost_per_verified_task",
    "verified_revenue_usd",
}


def receipt(task_id: str, **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "task_id": task_id,
        "owner": "worker-a",
        "outcome": "The page shows the new plan",
        "target": "https://example.com/pricing",
        "claimed_status": "done",
        "report": "Merged and confirmed.",
        "proof": [
            {
                "kind": "http_contains",
                "ref": "https://example.com/pricing",
                "expect": "Team plan",
                "checked_by": "runner",
                "result": "pass",
            }
        ],
        "cost": {"usd": 0.5},
    }
    base.update(changes)
    return base


def jsonl(path: Path, *records: dict[str, Any] | bytes) -> Path:
    lines = [r if isinstance(r, bytes) else orjson.dumps(r) for r in records]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*LANDED, *args], input=stdin, capture_output=True, timeout=60, check=False
    )


# --- exit codes, from a real process -------------------------------------------------------------


@pytest.mark.slow
def test_exit_0_when_every_done_claim_meets_its_bar(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "ok.jsonl", receipt("a"), receipt("b", claimed_status="held", proof=[]))
    proc = run("check", str(path))
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    assert b"every done claim meets its bar" in proc.stdout
    assert proc.stderr == b""


@pytest.mark.slow
def test_exit_1_when_a_done_claim_misses_its_bar(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "miss.jsonl", receipt("a"), {"status": "done"})
    proc = run("check", str(path))
    assert proc.returncode == 1
    assert b"line-2" in proc.stdout and b"DOD-6" in proc.stdout
    rows = {
        line.split("│")[2].strip(): line
        for line in proc.stdout.decode().splitlines()
        if "│" in line
    }
    # the proven claim reads DONE on its row, the unproven one NOT DONE
    assert "DONE" in rows["a"] and "NOT DONE" not in rows["a"]
    assert "NOT DONE" in rows["line-2"]
    assert b"landed explain RULE" in proc.stdout


@pytest.mark.slow
def test_exit_3_on_invalid_lines_with_file_and_line_and_the_rest_scored(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "bad.jsonl", receipt("a"), b"{not json", receipt("c"))
    proc = run("check", str(path))
    assert proc.returncode == 3
    out = proc.stdout.decode()
    assert f"{path}:2: not valid JSON" in out
    assert "Traceback" not in out + proc.stderr.decode()
    data = orjson.loads(run("check", str(path), "--json").stdout)
    assert [t["task_id"] for t in data["tasks"]] == ["a", "c"]
    assert data["invalid"][0]["line"] == 2


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "no such file"), (b"", "no receipts"), (b"\x00\x01\x02\xff", "not valid JSON")],
)
@pytest.mark.slow
def test_exit_3_on_unusable_input_never_a_traceback(
    tmp_path: Path, content: bytes | None, expected: str
) -> None:
    path = tmp_path / "input.jsonl"
    if content is not None:
        path.write_bytes(content)
    proc = run("check", str(path))
    assert proc.returncode == 3
    text = proc.stdout.decode() + proc.stderr.decode()
    assert expected in text and "Traceback" not in text
    if content is None or content == b"":
        # Nothing was read: said as such, with no scorecard of zeros that reads like a result.
        assert "not scored" in text and "governance scorecard" not in text, text


@pytest.mark.slow
def test_an_unreadable_trust_key_exits_3_before_scoring(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "ok.jsonl", receipt("a"))
    proc = run("check", str(path), "--trust", str(tmp_path / "missing.pub"))
    assert proc.returncode == 3
    assert b"--trust" in proc.stderr and b"Traceback" not in proc.stderr
    assert proc.stdout == b""
    # With --json the refusal is also one JSON object on stdout, for a caller that parses it.
    proc = run("check", str(path), "--json", "--trust", str(tmp_path / "missing.pub"))
    assert proc.returncode == 3
    answer = orjson.loads(proc.stdout)
    assert answer["error"] == "trust unavailable" and "missing.pub" in answer["message"]


@pytest.mark.slow
def test_stdin_is_read_with_a_dash() -> None:
    proc = run("check", "-", "--json", stdin=orjson.dumps(receipt("piped")) + b"\n")
    assert proc.returncode == 0
    assert orjson.loads(proc.stdout)["tasks"][0]["task_id"] == "piped"


@pytest.mark.slow
def test_help_names_the_exit_codes() -> None:
    proc = run("check", "--help")
    assert proc.returncode == 0
    text = b" ".join(proc.stdout.split())
    assert b"Exit codes: 0" in text and b"1 at least one does not" in text and b"3 invalid" in text


@pytest.mark.slow
def test_the_sample_command_confirms_every_expected_verdict() -> None:
    proc = run("sample", "--json")
    assert proc.returncode == 0, proc.stdout.decode()
    report = orjson.loads(proc.stdout)
    assert report["expected_verdicts_match"] is True
    assert report["check_exit_code"] == 1  # the sample's overclaims are found
    assert report["scorecard"]["verified_revenue_usd"] == 1200.0


# --- the JSON contract and the scorecard, in process ---------------------------------------------

runner = CliRunner()


def check_json(path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["check", str(path), "--json", *args])
    return result.exit_code, orjson.loads(result.stdout)


def test_json_keys_are_the_stable_contract(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "r.jsonl", receipt("a"), receipt("b", proof=[]), b"[]")
    code, data = check_json(path)
    assert code == 3
    assert set(data) == {"tasks", "invalid", "scorecard"}
    for task in data["tasks"]:
        assert set(task) >= TASK_KEYS
        assert all(set(f) == {"rule", "message"} for f in task["findings"])
    assert data["tasks"][0]["proof_level"] == "P3" and data["tasks"][0]["meets_bar"] is True
    assert data["tasks"][1]["proof_level"] == "P1" and data["tasks"][1]["meets_bar"] is False
    assert {"line", "reason"} <= set(data["invalid"][0])
    assert set(data["scorecard"]) >= CARD_KEYS


def _fronted(record: dict[str, Any]) -> bytes:
    """``record`` with a failed claim put in front of its own keys (one JSON reader sees the
    first copy, another the last)."""
    return b'{"verdict":"failed","claimed_status":"failed",' + orjson.dumps(record)[1:]


@pytest.mark.parametrize("trust", [False, True])
def test_a_receipt_giving_a_key_twice_is_invalid_never_scored(tmp_path: Path, trust: bool) -> None:
    path = jsonl(tmp_path / "twice.jsonl", receipt("a"), _fronted(receipt("b")))
    args = ["--trust", str(_public_key(tmp_path))] if trust else []
    code, data = check_json(path, *args)
    assert code == 3
    assert [t["task_id"] for t in data["tasks"]] == ["a"]
    (bad,) = data["invalid"]
    assert bad["line"] == 2 and "'claimed_status' appears twice" in bad["reason"]
    assert data["scorecard"]["done_claimed"] == 1


def _public_key(tmp_path: Path) -> Path:
    path = tmp_path / "verifier.pub"
    path.write_bytes(KeyPair.generate().public_pem())
    return path


def test_scorecard_figures(tmp_path: Path) -> None:
    reconciled = receipt(
        "r",
        claimed_status="reconciled",
        business_outcome={"class": "payment", "verified": True},
        landed={"revenue_usd": 1200.0},
        cost={"usd": 1.5},
    )
    unproven_revenue = receipt("u", proof=[], landed={"revenue_usd": 999.0})
    path = jsonl(
        tmp_path / "card.jsonl",
        receipt("a"),
        reconciled,
        unproven_revenue,
        receipt("h", claimed_status="held", proof=[], cost=None),
    )
    code, data = check_json(path)
    card = data["scorecard"]
    assert code == 1
    assert (card["done_claimed"], card["done_proven"], card["proof_rate"]) == (3, 2, 2 / 3)
    assert (card["held"], card["settled"], card["hold_rate"]) == (1, 4, 0.25)
    assert card["cost_usd"] == 2.5 and card["cost_logged"] == 3
    assert card["cost_per_verified_task"] == 1.25
    assert card["verified_revenue_usd"] == 1200.0  # the unproven claim's revenue does not count


def test_a_negative_cost_or_revenue_is_not_counted(tmp_path: Path) -> None:
    # A cost below zero would lower the cost per verified task of every other receipt.
    path = jsonl(
        tmp_path / "neg.jsonl",
        receipt("a"),
        receipt("b", cost={"usd": -1000.0}),
    )
    _, data = check_json(path)
    card = data["scorecard"]
    assert card["cost_logged"] == 1, card
    assert card["cost_usd"] >= 0 and card["cost_per_verified_task"] >= 0, card


def test_scorecard_follows_the_seeds_definitions(tmp_path: Path) -> None:
    """Proof rate is done at P3 or above over done claimed (a reconciled claim read back at P3
    counts, though it misses its own P4 bar); held counts the verifier's held verdict; revenue
    counts only on a task that is done."""
    at_p3 = receipt("rec-p3", claimed_status="reconciled", cost={"usd": 2.0})
    held = receipt(
        "held-by-runner",
        claimed_status="scheduled",
        proof=[],
        verdict="held",
        verdict_by="runner",
        cost=None,
    )
    not_done = receipt(
        "paid-but-says-not",
        claimed_status="executed",
        report="Charge attempt failed, refund pending; customer has not paid.",
        business_outcome={"class": "payment", "verified": True},
        landed={"revenue_usd": 1200.0},
        cost=None,
    )
    code, data = check_json(jsonl(tmp_path / "seed.jsonl", at_p3, held, not_done))
    card = data["scorecard"]
    tasks = {t["task_id"]: t for t in data["tasks"]}
    assert tasks["rec-p3"]["proof_level"] == "P3" and not tasks["rec-p3"]["meets_bar"]
    assert (card["done_claimed"], card["done_proven"], card["proof_rate"]) == (1, 1, 1.0)
    assert card["cost_per_verified_task"] == 2.0
    assert tasks["held-by-runner"]["proven_status"] == "held"
    assert card["held"] == 1
    assert card["verified_revenue_usd"] == 0.0
    assert code == 1  # the reconciled claim still misses its bar


def test_division_by_zero_is_null_in_json_and_na_in_text(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "none.jsonl", receipt("x", claimed_status="executed", cost=None))
    code, data = check_json(path)
    card = data["scorecard"]
    assert code == 0
    assert card["proof_rate"] is None and card["cost_per_verified_task"] is None
    assert card["cost_usd"] is None  # nobody logged cost: unknown, not $0
    text = runner.invoke(app, ["check", str(path)]).stdout
    assert text.count("n/a") >= 3


def test_the_text_table_caps_rows_but_not_the_verdict(tmp_path: Path) -> None:
    records = [receipt(f"t{i}") for i in range(5)] + [receipt("last", proof=[])]
    path = jsonl(tmp_path / "many.jsonl", *records)
    result = runner.invoke(app, ["check", str(path), "--max-rows", "2"])
    assert result.exit_code == 1
    assert "4 more task(s) not shown, 1 of them missing the bar" in result.stdout


# --- --live against a real server on loopback ----------------------------------------------------

PAGES = {"/ok": b"<h1>Team plan</h1>", "/changed": b"<h1>Starter plan</h1>", "/slow": b"Team plan"}


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/slow":
            threading.Event().wait(3)
        body = PAGES.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body or b"")))
        self.end_headers()
        # The checker gives up on /slow first, as it should.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body or b"")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def live_receipt(task_id: str, url: str, **proof: Any) -> dict[str, Any]:
    # The outcome names the local server, so DOD-8 lets a loopback read-back count here.
    item = {"kind": "http_contains", "ref": url, "expect": "Team plan", "checked_by": "runner"}
    item.update({"result": "pass", **proof})
    return receipt(task_id, outcome="The page on the local test server", target=url, proof=[item])


@pytest.mark.slow
def test_live_downgrades_proofs_that_no_longer_hold(tmp_path: Path, site: str) -> None:
    path = jsonl(
        tmp_path / "live.jsonl",
        live_receipt("still-there", f"{site}/ok"),
        live_receipt("changed", f"{site}/changed"),
        live_receipt("gone", f"{site}/missing"),
        live_receipt("refused", "http://127.0.0.1:9/ok"),
        live_receipt("slow", f"{site}/slow"),
        live_receipt("failed-then", f"{site}/ok", result="fail"),
    )
    offline_code, offline = check_json(path)
    assert offline_code == 1  # only failed-then misses offline
    assert [t["meets_bar"] for t in offline["tasks"]] == [True] * 5 + [False]

    proc = run(
        "check",
        str(path),
        "--json",
        "--live",
        "--live-private",
        "--timeout",
        "1",
        "--concurrency",
        "4",
    )
    data = orjson.loads(proc.stdout)
    by_id = {t["task_id"]: t for t in data["tasks"]}
    assert proc.returncode == 1
    assert by_id["still-there"]["meets_bar"] and by_id["still-there"]["proof_level"] == "P3"
    for task_id, rule in [("changed", "DOD-4"), ("gone", "DOD-5"), ("refused", "DOD-5")]:
        assert not by_id[task_id]["meets_bar"], task_id
        assert by_id[task_id]["findings"][0]["rule"] == rule, by_id[task_id]
    assert "404" in by_id["gone"]["findings"][0]["message"]
    assert "did not answer within 1s" in by_id["slow"]["findings"][0]["message"]
    # A live pass never upgrades a proof the receipt itself recorded as failed.
    assert not by_id["failed-then"]["meets_bar"]
    assert b"re-reading" not in proc.stderr  # no progress bar when stderr is not a terminal


@pytest.mark.slow
def test_live_shows_a_progress_bar_on_a_terminal_and_keeps_stdout_clean(
    tmp_path: Path, site: str
) -> None:
    # stderr is a real pseudo-terminal here, as in an interactive shell; /slow keeps the run
    # going past the bar's first refresh.
    receipts = [live_receipt(f"t{i}", f"{site}/ok") for i in range(40)]
    path = jsonl(tmp_path / "live.jsonl", *receipts, live_receipt("slow", f"{site}/slow"))
    leader, follower = os.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [*LANDED, "check", str(path), "--json", "--live", "--live-private", "--timeout", "1"],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    seen: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed with the process
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        stdout, _ = proc.communicate(timeout=60)
    finally:
        reader.join(timeout=10)
        os.close(leader)
    terminal = b"".join(seen)
    assert b"re-reading http_contains proofs" in terminal, terminal[-2000:]
    # The bar lives on stderr only: stdout is still exactly one JSON report.
    report = orjson.loads(stdout)
    assert len(report["tasks"]) == 41
    assert proc.returncode == 1  # /slow does not answer within 1 s


def _mixed_lines(count: int) -> list[bytes]:
    # Every shape the reader knows, with costs that do not sum exactly in floating point.
    lines: list[bytes] = [b"\xef\xbb\xbf" + orjson.dumps(receipt("t-bom"))]
    for i in range(count):
        shape = i % 9
        if shape == 0:
            lines.append(orjson.dumps(receipt(f"t{i}", cost={"usd": 0.1 + i * 1e-7})))
        elif shape == 1:
            lines.append(orjson.dumps({"status": "done"}))  # its task id is its line number
        elif shape == 2:
            lines.append(orjson.dumps({"id": i, "state": "held", "cost": {"usd": 1e-12 * i}}))
        elif shape == 3:
            lines.append(b'{"task_id": "broken", "claimed_status": ')
        elif shape == 4:
            lines.append(b"   ")
        elif shape == 5:
            lines.append(orjson.dumps(receipt(f"t{i}", report="still pending at the registrar")))
        elif shape == 6:
            lines.append(orjson.dumps(receipt(f"t{i}", target=f"http://localhost:{i}/")))
        elif shape == 7:
            paid = {"class": "payment", "ref": f"p{i}", "verified": True}
            lines.append(
                orjson.dumps(
                    receipt(
                        f"t{i}",
                        claimed_status="reconciled",
                        business_outcome=paid,
                        landed={"revenue_usd": 10.01 + i / 3},
                    )
                )
            )
        else:
            lines.append(b'{"task_id": "t", "claimed_status": "done", "exit_code": "zero"}')
    lines.append(_fronted(receipt("t-twice")))  # in the second half, when split in two
    return lines


_SPLIT_RUN = """
import os, sys
from landed.receipts.check import split_point
from landed.cli.check import run_check
path, out_path, as_json, max_rows, split_min_bytes = sys.argv[1:]
fd = os.open(path, os.O_RDONLY)
if int(split_min_bytes) == 1:
    assert split_point(fd, 1) is not None, "the split path must run here"
os.close(fd)
with open(out_path, "w") as out:
    code = run_check(path, as_json=as_json == "1", max_rows=int(max_rows), out=out,
                     split_min_bytes=int(split_min_bytes))
sys.exit(code)
"""


@pytest.mark.slow
@pytest.mark.parametrize("as_json", [True, False])
@pytest.mark.parametrize("max_rows", [3, 200])
def test_two_processes_give_exactly_the_one_process_report(
    tmp_path: Path, as_json: bool, max_rows: int
) -> None:
    # A fresh process: the split only runs where no other thread could hold a lock at the fork.
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(_mixed_lines(2_000)) + b"\n")
    outputs = []
    for split_min_bytes in (1 << 62, 1):
        out_path = tmp_path / f"out-{split_min_bytes}.txt"
        args = [str(path), str(out_path), str(int(as_json)), str(max_rows), str(split_min_bytes)]
        proc = subprocess.run(
            [sys.executable, "-c", _SPLIT_RUN, *args], capture_output=True, check=False
        )
        assert not proc.stderr, proc.stderr.decode()
        outputs.append((proc.returncode, out_path.read_bytes()))
    assert outputs[0][0] == 3
    assert outputs[0] == outputs[1]
    if as_json:
        report = orjson.loads(outputs[0][1])
        assert [t["line"] for t in report["tasks"]] == sorted(t["line"] for t in report["tasks"])
        assert report["tasks"][-1]["line"] > 2_000 // 2  # both halves are there
        assert "line-2001" in {t["task_id"] for t in report["tasks"]}  # i = 1999, line 2001


# --- user text in the text report ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("task_id", ["[/]", "\x1b[2J", "[bold red]fake[/]", "a\u202eb"])
def test_task_ids_are_shown_as_text_never_as_markup_or_control_codes(
    tmp_path: Path, task_id: str
) -> None:
    # A real process: the text report must not crash on markup nor pass raw control codes on.
    weird = receipt(task_id, claimed_status=task_id + " done", proof=[], verdict="\x1b]0;x\x07")
    path = jsonl(tmp_path / "[red]f\x1b.jsonl", weird)
    proc = run("check", str(path))
    assert proc.returncode == 1, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    out = proc.stdout.decode()
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    visible = task_id.replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")
    assert visible in out.replace("\n", "")  # shown as written, escapes made visible
    assert "[red]f\\x1b.jsonl" in out.replace("\n", "")  # the file name is text too


@pytest.mark.slow
def test_live_leaves_a_ref_it_cannot_reread_as_it_is_with_a_note(tmp_path: Path, site: str) -> None:
    # The workflow cites a configured source ("site:/pricing"), not a URL: --live cannot re-read
    # it, so the proof neither gains nor loses anything, and the report says why.
    named = live_receipt("source-ref", "site:/pricing")
    named["target"] = "https://example.com/pricing"
    weak = live_receipt("weak-label", f"{site}/ok", expect="non_empty (weak default)")
    path = jsonl(tmp_path / "named.jsonl", named, weak)
    offline_code, offline = check_json(path)
    assert offline_code == 1  # the weak-label task misses its bar
    by_id = {t["task_id"]: t for t in offline["tasks"]}
    assert by_id["source-ref"]["proof_level"] == "P3" and by_id["source-ref"]["meets_bar"]
    # The weak default label is not an expected text: DOD-4 counts it as an assertion.
    assert not by_id["weak-label"]["meets_bar"]
    assert by_id["weak-label"]["findings"][0]["rule"] == "DOD-4"

    proc = run("check", str(path), "--json", "--live", "--live-private", "--timeout", "2")
    data = orjson.loads(proc.stdout)
    live = {t["task_id"]: t for t in data["tasks"]}
    assert live["source-ref"]["proof_level"] == "P3" and live["source-ref"]["meets_bar"]
    notes = [f["message"] for f in live["source-ref"]["findings"]]
    assert any("was not re-read live" in n and "not an http(s) URL" in n for n in notes), notes
    assert not live["weak-label"]["meets_bar"]  # a live fetch never upgrades it either


# --- the --json encoder --------------------------------------------------------------------------

_texts = st.text(max_size=30) | st.none()


@given(
    tasks=st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=10**9),
            _texts,
            _texts,
            st.sampled_from(list(ProofLevel)),
            st.sampled_from([None, *ProofLevel]),
            st.booleans(),
            st.booleans(),
            st.sampled_from(list(Status)),
            st.lists(st.tuples(st.sampled_from(["DOD-2", "DOD-7"]), st.text(max_size=40))),
        ),
        max_size=20,
    )
)
@pytest.mark.slow
def test_each_json_task_is_byte_for_byte_the_reference_encoding(
    tasks: list[tuple[Any, ...]],
) -> None:
    # The sink encodes a grade's fields once and reuses them; what it writes must be exactly
    # what encoding the whole task object would write, for every grade seen again or not.
    tails: dict[Any, bytes] = {}
    for line, task_id, claimed, level, required, done, meets, proven, findings in tasks * 2:
        record = cast(Record, SimpleNamespace(task_id=task_id, claimed_status=claimed))
        graded = RawGrade(level, required, done, meets, proven, tuple(findings))
        assert _task_bytes(line, record, graded, tails) == orjson.dumps(
            _task_json(line, record, graded)
        )


def test_emoji_codes_and_markup_in_a_task_id_print_as_written(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "emo.jsonl", receipt("deploy:rocket:prod", proof=[]))
    out = runner.invoke(app, ["check", str(path)]).stdout
    assert "deploy:rocket:prod" in out and "\U0001f680" not in out


@pytest.mark.slow
def test_live_reads_public_pages_only_unless_told(tmp_path: Path, site: str) -> None:
    """Receipts come from agents: a ref on loopback (by address or by a name that resolves
    there) is not fetched by default, so the checker cannot be made to read, and report on,
    the network it runs in."""
    port = site.rsplit(":", 1)[1]
    path = jsonl(
        tmp_path / "inward.jsonl",
        live_receipt("by-address", f"{site}/ok"),
        live_receipt("by-name", f"http://localhost:{port}/ok"),
        live_receipt("metadata", "http://169.254.169.254/latest/meta-data/"),
    )
    proc = run("check", str(path), "--json", "--live", "--timeout", "2")
    data = orjson.loads(proc.stdout)
    for task in data["tasks"]:
        assert not task["meets_bar"], task
        assert any("not a public address" in f["message"] for f in task["findings"]), task
    allowed = run("check", str(path), "--json", "--live", "--live-private", "--timeout", "2")
    by_address = orjson.loads(allowed.stdout)["tasks"][0]
    assert by_address["meets_bar"], by_address


@pytest.mark.slow
def test_a_proof_live_found_gone_is_not_also_said_to_have_failed(tmp_path: Path, site: str) -> None:
    path = jsonl(tmp_path / "gone.jsonl", live_receipt("gone", f"{site}/missing"))
    proc = run("check", str(path), "--json", "--live", "--live-private", "--timeout", "2")
    (task,) = orjson.loads(proc.stdout)["tasks"]
    messages = [f["message"] for f in task["findings"]]
    assert not any("did not pass (result='pass')" in m for m in messages), messages
    assert any("404" in m for m in messages), messages


def test_an_escaped_class_key_reads_the_same_on_both_paths(tmp_path: Path) -> None:
    """ "class\\u005f" is the key class_: an unknown field to the fast reader, and (no longer
    populating the field by its name) to the model too; both grade the line the same."""
    line = (
        b'{"task_id":"t","claimed_status":"done","proof":[{"kind":"record","ref":"x",'
        b'"result":"pass","checked_by":"r"}],"business_outcome":{"class\\u005f":5}}'
    )
    _, data = check_json(jsonl(tmp_path / "c.jsonl", line))
    model = grade(Receipt.model_validate(orjson.loads(line)))
    (task,) = data["tasks"]
    assert data["invalid"] == [] and task["proof_level"] == model.proof_level.label
    assert task["meets_bar"] == model.meets_bar


def test_costs_past_a_floats_range_do_not_crash_the_report(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "huge.jsonl",
        receipt("a", claimed_status="x", proof=[], cost={"usd": 1e308}),
        receipt("b", claimed_status="x", proof=[], cost={"usd": 1e308}),
    )
    code, data = check_json(path)
    assert code == 0 and data["scorecard"]["cost_logged"] == 2
