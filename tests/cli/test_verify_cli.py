"""``landed verify``: exit codes, evidence, labels and honest wording, in-process and as the
installed command."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.http import LocalHTTP
from typer.testing import CliRunner

from landed.cli import app

LANDED = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "landed")
FORBIDDEN = ("re-fetch", "refetch", "re-fetched")


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["verify", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def never_says_refetched(*texts: str) -> None:
    for text in texts:
        for word in FORBIDDEN:
            assert word not in text.lower()


@pytest.fixture
def server() -> Iterator[LocalHTTP]:
    srv = LocalHTTP().start()
    yield srv
    srv.stop()


@pytest.mark.slow
def test_installed_command_exit_codes_0_1_3() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDED_")}
    cases = [
        (["--probe", "echo 45", "--count", "45"], 0),
        (["--probe", "echo 0", "--count", "45"], 1),
        (["--probe", "false"], 3),
    ]
    for args, code in cases:
        done = subprocess.run(
            [LANDED, "verify", *args], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == code, (args, done.stdout, done.stderr)
        assert "the probe returned" in done.stdout
        never_says_refetched(done.stdout, done.stderr)


def test_pass_prints_the_raw_output_as_evidence() -> None:
    code, out, _ = cli("--probe", "echo 45", "--count", "45")
    assert code == 0
    assert "the probe returned 3 bytes" in out
    assert "\n45\n" in out
    assert "expectation: count(45)" in out
    never_says_refetched(out)


def test_zero_string_under_count_45_fails() -> None:
    code, out, _ = cli("--probe", "echo 0", "--count", "45")
    assert code == 1
    assert "outcome: empty" in out and "\n0\n" in out


def test_more_than_claimed_is_duplicated() -> None:
    code, out, _ = cli("--probe", "echo 90", "--count", "45")
    assert code == 1 and "outcome: duplicated" in out


@pytest.mark.slow
def test_empty_output_error_and_timeout_are_reported_as_such() -> None:
    code, out, _ = cli("--probe", "true", "--count", "0")
    assert code == 1 and "outcome: empty" in out and "the probe returned nothing" in out
    code, out, _ = cli("--probe", "sh -c 'echo partial; exit 2'", "--count", "1")
    assert code == 3 and "probe-error" in out and "partial" in out
    code, out, _ = cli("--probe", "sleep 5", "--timeout", "0.3")
    assert code == 3 and "did not finish within 0.3s" in out


def test_help_states_the_limit_and_never_says_refetched() -> None:
    result = CliRunner().invoke(app, ["verify", "--help"], env={"COLUMNS": "200"})
    text = " ".join(result.stdout.split())
    assert result.exit_code == 0
    assert "a probe can only be as independent as the command you give it" in text
    assert "cannot prove the command did any I/O against the system of record" in text
    assert "shlex.split" in text and "--shell" in text
    never_says_refetched(text)


def test_weak_default_is_labelled_in_json_and_in_human_output() -> None:
    code, out, _ = cli("--probe", "echo 0", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["weak"] is True
    assert data["expectation"] == "non_empty (weak default)"
    assert data["observation"]["weak"] is True
    assert "any non-empty output would have passed" in data["note"]
    code, out, _ = cli("--probe", "echo 0")
    assert "note: non_empty is the weak default: any non-empty output would have passed" in out
    code, out, _ = cli("--probe", "echo 45", "--count", "45", "--json")
    assert json.loads(out)["weak"] is False and json.loads(out)["note"] == ""


def test_json_output_carries_the_label_and_evidence() -> None:
    code, out, _ = cli("--probe", "echo 200 OK", "--contains", "200", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["expectation"] == 'contains("200")'
    assert data["observation"]["evidence"]["text"] == "200 OK\n"
    never_says_refetched(out)


def test_probe_string_is_split_without_a_shell_unless_asked() -> None:
    code, out, err = cli("--probe", "echo 4 | tr 4 5", "--count", "5")
    assert code == 1
    assert "4 | tr 4 5" in out  # the pipe reached echo as an argument
    assert "no shell runs without --shell" in err
    code, out, _ = cli("--probe", "echo 4 | tr 4 5", "--shell", "--count", "5")
    assert code == 0


def test_ansi_escapes_are_shown_escaped() -> None:
    code, out, _ = cli("--probe", "printf '\\033[2J\\033[31mgone'")
    assert code == 0
    assert "\x1b" not in out and "\\x1b[2J" in out


def test_http_probe(server: LocalHTTP) -> None:
    server.route("/pricing", body=b"<h1>Team plan</h1>")
    server.json("/api", '{"plan": {"name": "Team"}, "seats": 5}')
    assert cli("--http", server.url("/pricing"), "--contains", "Team plan")[0] == 0
    assert cli("--http", server.url("/pricing"), "--contains", "Enterprise")[0] == 1
    assert cli("--http", server.url("/api"), "--json-path", "$.plan.name=Team")[0] == 0
    assert cli("--http", server.url("/api"), "--json-path", "$.seats>=5")[0] == 0
    assert cli("--http", server.url("/api"), "--json-path", '$.seats="5"')[0] == 1
    assert cli("--http", "http://127.0.0.1:1/", "--contains", "x")[0] == 3


def test_sql_probe_on_a_named_source(tmp_path: Path) -> None:
    db = tmp_path / "orders.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table orders (batch int)")
        conn.executemany("insert into orders values (?)", [(123,)] * 45)
    env = {"LANDED_SOURCES__ORDERS_DB__URL": f"sqlite:///{db}"}
    assert (
        cli(
            "--sql",
            "orders-db",
            "select count(*) from orders where batch = 123",
            "--count",
            "45",
            env=env,
        )[0]
        == 0
    )
    code, out, _ = cli("--sql", "billing", "select 1", "--count", "1", env=env)
    assert code == 3 and "LANDED_SOURCES__BILLING__URL" in " ".join(out.split())


def test_usage_and_input_errors() -> None:
    assert cli("--probe", "echo 1", "--count", "1", "--contains", "1")[0] == 2
    assert cli("--count", "1")[0] == 2
    code, _, err = cli("--probe", "echo 1", "--regex", "(unclosed")
    assert code == 3 and "regex" in err
    code, _, err = cli("--probe", "echo 'unbalanced")
    assert code == 3 and "could not be split" in err
    code, _, err = cli("--probe", "echo 1", "--rung-at-least", "delivred")
    assert code == 3 and "not a rung" in err


@pytest.mark.parametrize(
    ("args", "code", "error", "says"),
    [
        (["--count", "1"], 2, "usage", "exactly one of --probe"),
        (["--probe", "echo 1", "--count", "1", "--contains", "1"], 2, "usage", "at most one"),
        (["--probe", "echo 1", "--regex", "(unclosed"], 3, "invalid probe", "regex"),
        (["--probe", "echo 1", "--json-path", "nope"], 3, "invalid probe", "--json-path"),
        (["--http", "/x", "--config", "/no/such/landed.toml"], 3, "configuration", "does not"),
    ],
)
def test_errors_under_json_are_one_json_object_on_stdout(
    args: list[str], code: int, error: str, says: str
) -> None:
    """A program reading `landed verify --json` gets JSON for a refused invocation too."""
    got, out, err = cli(*args, "--json")
    assert got == code, (out, err)
    answer = json.loads(out)
    assert answer["error"] == error and says in answer["message"], answer
    assert says in " ".join(err.split())


@pytest.mark.slow
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_at_least_must_be_a_finite_number(value: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDED_")}
    done = subprocess.run(
        [LANDED, "verify", "--probe", "echo 1", "--at-least", value],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--at-least needs a finite number" in " ".join(done.stderr.split())


def test_pass_wording_says_what_was_observed_not_that_work_landed() -> None:
    code, out, _ = cli("--probe", "echo 45", "--count", "45")
    assert code == 0
    assert "outcome: pass: the probe returned what count(45) expects" in out
    assert "(landed)" not in out
    code, out, _ = cli("--probe", "echo 0", "--count", "45")
    assert code == 1 and "the probe did not return what count(45) expects" in out
    assert "not landed" not in out


def test_error_messages_are_printed_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """A task id or path in an error is text: no markup, no emoji codes."""
    from landed.cli.out import fail

    message = "task id 'deploy:rocket:prod' in [bold]x[/bold]"
    exit_ = fail(message, 3, json_error="refused")
    out, err = capsys.readouterr()
    assert message in " ".join(err.split())
    assert json.loads(out) == {"error": "refused", "message": message}
    assert exit_.exit_code == 3


@pytest.mark.parametrize("flag", ["--equals", "--json-path"])
def test_a_flag_value_giving_a_key_twice_is_refused_naming_it(flag: str) -> None:
    value = '{"a":1,"a":2}' if flag == "--equals" else '$.x={"a":1,"a":2}'
    code, out, err = cli("--probe", 'echo {"x":{"a":2}}', flag, value)
    assert code == 3, out + err
    assert "'a' appears twice" in out + err
