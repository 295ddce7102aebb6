"""`make test-fast` installs nothing outside .venv; the tests that start Prometheus,
Alertmanager or Chromium (system packages) are `slow`, so test-fast leaves them out and
`make test` (which installs them) runs them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = (ROOT / "Makefile").read_text()
# What a test file does to start a system package's program.
SYSTEM_PROGRAMS = re.compile(
    r"helpers\.prom\b|helpers import [^\n]*\bprom\b|"
    r"which\(\"(chromium|promtool|amtool|prometheus|prometheus-alertmanager)\"\)"
)
SLOW_MODULE = re.compile(r"^pytestmark = (\[[^\]]*)?pytest\.mark\.slow", re.M)


def _target(name: str) -> tuple[list[str], str]:
    """A Makefile target's prerequisites and its recipe."""
    match = re.search(rf"^{re.escape(name)}:([^\n]*)\n((?:\t[^\n]*\n)*)", MAKEFILE, re.M)
    assert match, f"the Makefile has no {name} target"
    return match.group(1).split(), match.group(2)


def test_test_fast_installs_nothing_system_wide() -> None:
    prerequisites, recipe = _target("test-fast")
    assert "system-deps" not in prerequisites
    assert not re.search(r"apt-get|\bsudo\b|\$\(SUDO\)|system-deps", recipe)
    assert '-m "not slow"' in recipe


def test_make_test_still_installs_the_system_packages_it_starts() -> None:
    assert "system-deps" in _target("test")[0]
    assert "system-deps" in _target("pytest")[0]


def test_every_test_that_starts_a_system_package_is_slow() -> None:
    starting = [
        path
        for path in sorted((ROOT / "tests").rglob("test_*.py"))
        if SYSTEM_PROGRAMS.search(path.read_text())
    ]
    assert len(starting) >= 5  # the scan finds the ones known today
    fast = [
        p.relative_to(ROOT).as_posix() for p in starting if not SLOW_MODULE.search(p.read_text())
    ]
    assert not fast, f"these start a system package's program and are not marked slow: {fast}"
