"""docs/architecture.md stays true to the tree: every room it lists exists, every module of a
room is named in that room's row (once), the backends are imported only where it says, and
``workflows/__init__`` names every workflow."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from helpers.source import parse, parse_many

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text()
BACKENDS = ("sqlite", "postgres")


def _table(heading: str) -> list[list[str]]:
    section = DOC.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[1:]]


def _room_path(room: str) -> Path:
    name = room.strip("`").rstrip("/")
    if name in ("workflows", "activities"):
        return ROOT / name
    return ROOT / "src" / "landed" / name


def _modules(folder: Path) -> set[str]:
    """A room's modules and its subpackages (``cli/demo/``), each by its own name."""
    modules = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
    return modules | {p.parent.name for p in folder.glob("*/__init__.py")}


ROOMS = _table("What each room holds")


def test_every_layer_folder_exists() -> None:
    for _, folder, _ in _table("The rooms"):
        path = folder.split(" ")[0].strip("`")
        assert (ROOT / path).exists(), f"docs/architecture.md names {path}, which is not there"


def test_every_package_of_landed_is_a_room() -> None:
    listed = {room.strip("`").rstrip("/") for room, _ in ROOMS}
    packages = {p.parent.name for p in (ROOT / "src" / "landed").glob("*/__init__.py")}
    assert packages - {"samples"} <= listed
    assert {"workflows", "activities"} <= listed


@pytest.mark.parametrize("room,text", ROOMS, ids=[r for r, _ in ROOMS])
def test_each_room_row_names_each_of_its_modules_once(room: str, text: str) -> None:
    folder = _room_path(room)
    if not folder.is_dir():
        assert folder.with_suffix(".py").exists(), room
        return
    named = set(re.findall(r"`([a-z_]+)`", text))
    missing = sorted(_modules(folder) - named)
    assert not missing, f"{room} row of docs/architecture.md does not name {missing}"
    for module in _modules(folder):
        described = len(re.findall(rf"`{module}` \(", text))
        assert described <= 1, f"{room} row describes `{module}` {described} times"


def _imported(node: ast.AST) -> list[str]:
    """The modules an import statement names (``from landed.ledger import sqlite`` names both
    ``landed.ledger`` and ``landed.ledger.sqlite``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return []


@pytest.mark.slow
def test_only_the_factory_imports_the_backends() -> None:
    said = "`factory` is the only module that imports a backend"
    assert said in DOC
    pattern = re.compile(rf"landed\.ledger\.({'|'.join(BACKENDS)})(\.[a-z_]+)?")
    ledger = ROOT / "src" / "landed" / "ledger"
    importers = set()
    paths = [
        path
        for folder in (ROOT / "src" / "landed", ROOT / "workflows", ROOT / "activities")
        for path in folder.rglob("*.py")
        if not any(path.is_relative_to(ledger / backend) for backend in BACKENDS)
    ]  # a backend's own modules left out
    for path, tree in zip(paths, parse_many([p.read_text() for p in paths]), strict=True):
        for node in ast.walk(tree):
            if any(pattern.fullmatch(name) for name in _imported(node)):
                importers.add(path.relative_to(ROOT).as_posix())
    assert importers == {"src/landed/ledger/factory.py"}


def test_workflows_package_names_every_workflow() -> None:
    doc = ast.get_docstring(parse((ROOT / "workflows" / "__init__.py").read_text())) or ""
    paths = sorted((ROOT / "workflows").glob("*.py"))
    for tree in parse_many([path.read_text() for path in paths]):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                "workflow.defn" in ast.unparse(d) for d in node.decorator_list
            ):
                assert node.name in doc, f"workflows/__init__.py does not name {node.name}"
