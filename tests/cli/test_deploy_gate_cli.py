"""``landed deploy promote --gate``'s usage: refused before anything connects or changes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _promote(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "landed", "deploy", "promote", "B", *args],
        capture_output=True,
        text=True,
        timeout=60,
        # Nothing listens there: a usage error must come before any connection.
        env={"PATH": "/usr/bin:/bin", "TEMPORAL_ADDRESS": "127.0.0.1:9"},
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--gate"], "--gate needs --gate-input"),
        (["--gate", "--gate-input", "{gate}", "--ramp", "10"], "no --ramp"),
        (["--gate", "--gate-input", "{gate}", "--role", "actor"], "the runner among the roles"),
        (["--gate", "--gate-input", "{missing}"], "No such file"),
        (["--gate", "--gate-input", "{bad}"], "table"),
    ],
)
@pytest.mark.slow
def test_a_gate_without_what_it_needs_is_a_usage_error(
    args: list[str], says: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate.json"
    gate.write_text('{"source": "s", "credential": "c", "table": "t"}')
    bad = tmp_path / "bad.json"
    bad.write_text('{"source": "s", "credential": "c", "table": "t; drop table x"}')
    paths = {"gate": str(gate), "bad": str(bad), "missing": str(tmp_path / "none.json")}
    out = _promote(*[a.format(**paths) for a in args])
    assert out.returncode == 2, out.stdout + out.stderr
    assert says in out.stderr, out.stderr
