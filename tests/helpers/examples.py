"""Running an example folder as a user would: a copy of it, its own `./dev.sh` (a real
`landed dev`) until its ready event, and the example's commands run from the folder with the
venv on PATH and the stack's Temporal address."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent


#: Free ports only for what landed dev serves besides Temporal (the roles' metrics, the
#: exporter): beside another landed dev started at the same moment (another test worker's),
#: the default ports are a race between the check and the bind.
FREE_PORTS = {f"LANDED_{role}_METRICS_PORT": "0" for role in ("ACTOR", "VERIFIER", "RUNNER")}
FREE_PORTS["LANDED_EXPORTER__PORT"] = "0"


def user_env() -> dict[str, str]:
    """The caller's shell without landed's or Temporal's settings, with the venv on PATH (the
    README activates it)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LANDED_", "TEMPORAL_")) and not k.endswith("_METRICS_PORT")
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


@dataclass(frozen=True)
class Example:
    """A copied example folder and, once its dev.sh is up, the stack's ready event."""

    folder: Path
    ready: dict[str, Any]

    def run(self, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """One command in the folder, against the stack (`python` is this venv's)."""
        args = [sys.executable, *argv[1:]] if argv[0] == "python" else list(argv)
        env = {**user_env(), "TEMPORAL_ADDRESS": self.ready.get("temporal", "")}
        return subprocess.run(
            args, cwd=self.folder, env=env, capture_output=True, text=True, timeout=timeout
        )

    def expected(self) -> str:
        return (EXAMPLES / self.folder.name / "expected_output.txt").read_text()


def copy_example(name: str, tmp_path: Path) -> Path:
    """A copy of examples/NAME (without anything a run left in it)."""
    folder = tmp_path / name
    ignore = shutil.ignore_patterns("shop", "outbox", ".landed", "__pycache__", "*.db")
    shutil.copytree(EXAMPLES / name, folder, ignore=ignore)
    return folder


@contextmanager
def example_stack(
    name: str, tmp_path: Path, env: dict[str, str] | None = None
) -> Iterator[Example]:
    """A copy of examples/NAME with its `./dev.sh --headless --port 0 --json` running (with
    ``env`` added to the user's shell)."""
    folder = copy_example(name, tmp_path)
    err_path = tmp_path / f"{name}-dev.err"
    err = err_path.open("wb")
    dev = subprocess.Popen(
        [str(folder / "dev.sh"), "--headless", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        cwd=tmp_path,  # dev.sh enters its own folder, as a user runs it from anywhere
        env={**user_env(), **FREE_PORTS, **(env or {})},
    )
    try:
        yield Example(folder, _ready(dev, err_path))
    finally:
        _stop(dev)
        err.close()


def _ready(dev: subprocess.Popen[str], err: Path) -> dict[str, Any]:
    assert dev.stdout is not None
    for line in dev.stdout:
        event: dict[str, Any] = json.loads(line)
        if event.get("event") == "ready":
            return event
    pytest.fail(f"landed dev exited before it was ready: {err.read_text()[-3000:]}")


def _stop(dev: subprocess.Popen[str]) -> None:
    dev.send_signal(signal.SIGTERM)
    try:
        dev.wait(timeout=60)
    except subprocess.TimeoutExpired:
        dev.kill()
        dev.wait()
    assert dev.stdout is not None
    dev.stdout.close()
