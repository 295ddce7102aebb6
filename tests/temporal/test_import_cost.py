"""What importing landed costs: the package exports lazily, and the worker assembly loads a role's
workflows and activities only for that role."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.source import parse

import landed

ROOT = Path(__file__).resolve().parents[2]


def test_import_landed_builds_nothing_until_a_name_is_used() -> None:
    code = (
        "import sys, landed; "
        "heavy = [m for m in ('temporalio', 'pydantic', 'aiohttp', 'httpx', 'cryptography') "
        "if m in sys.modules]; "
        "print(','.join(heavy)); "
        "landed.Receipt; "
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert out == ["", "True"], out


def test_every_public_name_resolves_to_its_module() -> None:
    exports: dict[str, str] = landed._EXPORTS
    assert sorted(exports) == sorted(landed.__all__)
    for name, module in exports.items():
        value = getattr(landed, name)
        assert getattr(sys.modules[module], name) is value, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(landed, "nope")  # noqa: B009


def test_static_imports_match_the_lazy_table() -> None:
    """Type checkers read the TYPE_CHECKING imports, the runtime reads _EXPORTS: they must agree."""
    tree = parse((ROOT / "src" / "landed" / "__init__.py").read_text())
    static: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module
                for alias in stmt.names:
                    static[alias.asname or alias.name] = stmt.module
    assert static == landed._EXPORTS


def _loaded_after(code: str) -> list[str]:
    """The workflow and activity modules a fresh interpreter holds after running ``code``."""
    probe = (
        f"import sys; {code}; "
        "import json; print(json.dumps(sorted(m for m in sys.modules "
        "if m.startswith(('landed.workflows.', 'landed.activities.')))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded: list[str] = json.loads(out)
    return loaded


def test_each_role_loads_only_its_own_workflows_and_activities() -> None:
    # The CLI and the dev stack import the worker assembly before any role is chosen.
    assert _loaded_after("import landed.temporal.workers") == []
    # The actor: its act activity and the built-in acts, not the verifier's probes or the
    # runner's workflows.
    actor = _loaded_after(
        "from landed.temporal import registry; "
        "registry.actor(registry.actor_acts([]), {}, 'a', threads=4)"
    )
    assert actor == [
        "landed.activities._heartbeat",
        "landed.activities._threads",
        "landed.activities.act",
        "landed.activities.builtin_acts",
        # The person act a loop's repair for a person runs (landed repair done closes it).
        "landed.activities.person_act",
        # Its answer to the role check before a task starts: whether an act is registered.
        "landed.activities.role_check",
    ]
