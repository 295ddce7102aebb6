"""``landed snapshot`` and ``landed verify --before``/``--change``: before-states on the quick
path, in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from landed.cli import app


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def landed(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def rows(tmp_path: Path, n: int) -> Path:
    """The system of record: a file holding how many order lines exist."""
    path = tmp_path / "rows.txt"
    path.write_text(f"{n}\n")
    return path


def contracts(tmp_path: Path, source: Path, *expects: dict[str, object]) -> Path:
    path = tmp_path / "contracts.jsonl"
    probe = {"kind": "command", "argv": ["cat", str(source)], "timeout_s": 30.0}
    path.write_text(
        "".join(
            json.dumps({"action": "insert order lines", "probe": probe, "expect": e}) + "\n"
            for e in expects
        )
    )
    return path


def snapshot(tmp_path: Path, file: Path) -> Path:
    out = tmp_path / "before.json"
    code, stdout, stderr = landed("snapshot", "--contracts", str(file), "--out", str(out))
    assert code == 0, (stdout, stderr)
    return out


def test_an_outcome_already_there_before_is_vacuous_with_before(tmp_path: Path) -> None:
    source = rows(tmp_path, 45)
    snap = snapshot(tmp_path, contracts(tmp_path, source, {"type": "count", "value": 45}))
    code, out, _ = landed("verify", "--probe", f"cat {source}", "--count", "45")
    assert code == 0  # without a before-reading, 45 rows are 45 rows
    code, out, _ = landed(
        "verify", "--probe", f"cat {source}", "--count", "45", "--before", str(snap)
    )
    assert code == 1 and "outcome: vacuous" in out, out


def test_change_is_judged_against_the_snapshot(tmp_path: Path) -> None:
    source = rows(tmp_path, 20)
    snap = snapshot(
        tmp_path,
        contracts(
            tmp_path,
            source,
            {"type": "change", "value": 45},
            {"type": "count", "value": 45},
        ),
    )
    rows(tmp_path, 65)
    probe = ("verify", "--probe", f"cat {source}", "--before", str(snap))
    code, out, _ = landed(*probe, "--change", "+45")
    assert code == 0, out
    code, out, _ = landed(*probe, "--count", "45")
    assert code == 1 and "outcome: duplicated" in out, out
    code, out, _ = landed(*probe, "--change=-3")
    assert code == 3 and "holds no before-reading" in out + _


def test_a_change_without_a_before_reading_is_not_done(tmp_path: Path) -> None:
    code, out, _ = landed("verify", "--probe", "echo 45", "--change", "+45")
    assert code == 1
    assert "before-reading" in out and "landed snapshot" in out


def test_an_edited_snapshot_is_refused(tmp_path: Path) -> None:
    source = rows(tmp_path, 45)
    snap = snapshot(tmp_path, contracts(tmp_path, source, {"type": "count", "value": 45}))
    text = snap.read_text().replace('"value": 45', '"value": 0', 1)
    assert text != snap.read_text()
    snap.write_text(text)
    code, out, err = landed(
        "verify", "--probe", f"cat {source}", "--count", "45", "--before", str(snap)
    )
    assert code == 3 and "does not verify" in out + err


def test_a_snapshot_past_its_bound_is_refused(tmp_path: Path) -> None:
    from landed.probes import snapshot as snapshots

    big = tmp_path / "big.json"
    with big.open("wb") as out:
        out.truncate(snapshots.MAX_SNAPSHOT_BYTES + 10)
    code, out, err = landed("verify", "--probe", "echo 1", "--count", "1", "--before", str(big))
    assert code == 3 and "more than" in out + err
