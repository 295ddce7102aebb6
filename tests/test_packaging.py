"""The distribution installs: a wheel into a fresh venv, and the editable install, both import
landed, landed.workflows and landed.activities, and ship the sample receipts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IMPORTS = (
    "import importlib.resources as r, landed, landed.workflows, landed.activities; "
    "print(landed.__file__); print(landed.workflows.__file__); print(landed.activities.__file__); "
    "print(len(r.files('landed').joinpath('samples', 'receipts.jsonl').read_bytes()))"
)


def test_editable_install_imports_all_three() -> None:
    out = subprocess.run(
        [sys.executable, "-c", IMPORTS], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert Path(out[0]).is_relative_to(ROOT / "src" / "landed")
    # workflows/ and activities/ are the package's src/landed/workflows and src/landed/activities
    # (symlinks), so mypy, import-linter and editors read one package.
    assert out[1] == str(ROOT / "src" / "landed" / "workflows" / "__init__.py")
    assert out[2] == str(ROOT / "src" / "landed" / "activities" / "__init__.py")
    assert Path(out[1]).resolve().is_relative_to(ROOT / "workflows")
    assert Path(out[2]).resolve().is_relative_to(ROOT / "activities")
    assert int(out[3]) > 0


def _tracked_tree(into: Path) -> Path:
    """The project's tracked files, copied to ``into``: a build there can't reuse a stale
    build/ of the working tree (or write one), so a file left out of the packages fails here."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True, timeout=60
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_symlink():  # src/landed/workflows and src/landed/activities
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(os.readlink(source))
        elif source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return into


@pytest.mark.timeout(600)
def test_a_wheel_installs_into_a_fresh_venv(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    tree = _tracked_tree(tmp_path / "tree")
    # pip builds in an isolated environment from pyproject's build-system (the machine's
    # configured package index supplies setuptools and wheel).
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(wheels),
            str(tree),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    (wheel,) = wheels.glob("landed-*.whl")
    # Every module of workflows/ and activities/ ships, under landed/ (read through the links).
    shipped = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("workflows", "activities"):
        for module in (ROOT / folder).glob("*.py"):
            assert f"landed/{folder}/{module.name}" in shipped, module
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    # Install the wheel alone with this pip; its dependencies come from the current environment
    # through a .pth file, so the test needs no package index (the machine has no network).
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "landed-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    proc = subprocess.run(
        [str(python), "-c", IMPORTS],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # not the source tree, so only the installed copy can be imported
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split()
    for path in out[:3]:
        assert Path(path).is_relative_to(env_dir), path
    assert out[1].endswith("landed/workflows/__init__.py")
    assert out[2].endswith("landed/activities/__init__.py")
    assert int(out[3]) > 0
    cli = subprocess.run(
        [str(env_dir / "bin" / "landed"), "sample", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr


def test_the_tools_read_one_package() -> None:
    """workflows/ and activities/ are landed's own folders (symlinks under src/landed), so
    mypy and import-linter read them with the rest: no per-folder mapping, no import ignored."""
    for folder in ("workflows", "activities"):
        link = ROOT / "src" / "landed" / folder
        assert link.is_symlink() and link.resolve() == ROOT / folder, link
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["setuptools"]["package-dir"] == {"": "src"}
    assert set(config["tool"]["mypy"]["files"]) == {"src/landed", "dashboards", "bench"}
    assert config["tool"]["mypy"]["strict"] is True
    for folder in ("src", "workflows", "activities", "dashboards", "bench"):
        for path in (ROOT / folder).rglob("*.py"):
            assert "import-not-found" not in path.read_text(), path
