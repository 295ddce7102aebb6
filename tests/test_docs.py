"""The README and the documentation site: the README opens on the first task and stays short,
every block marked as a file's copy is that file, the CLI reference is the app's, and the site
builds with ``mkdocs build --strict``."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
# <!-- file: PATH --> then a fenced block: the block is PATH's content, byte for byte.
MARKED = re.compile(r"<!-- file: (\S+) -->\n```[a-z]*\n(.*?)```\n", re.S)


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_the_readme_is_at_most_1500_words() -> None:
    assert len(README.split()) <= 1500


def test_the_readme_opens_on_the_two_commands_then_the_first_task() -> None:
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings[:2] == ["The two commands", "Your first task"], headings
    intro = README.split("\n## ", 1)[0]
    assert len(re.findall(r"[.:]\s", intro + " ")) <= 4  # three sentences (one with a colon)
    commands = README.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    assert "make demo" in commands and "make test" in commands


def test_the_first_task_is_all_in_the_readme() -> None:
    marked = dict(MARKED.findall(README))
    assert set(marked) == {
        "examples/first_task/shop_acts.py",
        "examples/first_task/run.py",
        "examples/first_task/expected_output.txt",
    }
    assert "@landed.act(" in marked["examples/first_task/shop_acts.py"]
    run = marked["examples/first_task/run.py"]
    assert all(name in run for name in ("TaskSpec", "RecordProbe", "Count", "client.run"))
    assert "./dev.sh" in README


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_marked_as_a_file_is_that_file(page: Path) -> None:
    for path, block in MARKED.findall(page.read_text()):
        target = ROOT / path
        assert target.is_file(), f"{page.name} marks a block as {path}, which is not there"
        assert block == target.read_text(), f"{page.name}: the block marked {path} differs"


def test_every_docs_page_is_in_the_nav() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_IgnoreTags)
    listed = set(_nav_files(config["nav"]))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages == listed


def _nav_files(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [f for value in nav.values() for f in _nav_files(value)]
    if isinstance(nav, list):
        return [f for item in nav for f in _nav_files(item)]
    return []


class _IgnoreTags(yaml.SafeLoader):
    """mkdocs.yml names Python objects (!!python/name:...); this test needs only the nav."""


_IgnoreTags.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)


def _generator(name: str = "cli_reference") -> ModuleType:
    path = DOCS / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_the_apps() -> None:
    rendered = _generator().render()
    committed = (DOCS / "reference" / "cli.md").read_text()
    assert rendered == committed, "docs/reference/cli.md is stale: run `make docs`"


def test_the_room_table_is_the_docstrings() -> None:
    """docs/architecture.md's room table is rendered from each room's and module's docstring."""
    rooms = _generator("rooms")
    assert rooms.page() == (DOCS / "architecture.md").read_text(), (
        "the room table of docs/architecture.md is stale: run `make docs`"
    )
    table = rooms.render()
    for room in rooms.rooms():  # every room of the import contract has its row
        assert f"| `{room}" in table, room


def test_the_cli_reference_lists_every_command() -> None:
    page = (DOCS / "reference" / "cli.md").read_text()
    for command in ("landed submit", "landed dev", "landed ledger verify", "landed check"):
        assert f"`{command}`" in page


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=280,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    api = (site / "reference" / "api" / "index.html").read_text()
    names = (
        "landed.temporal.client.Client.run",
        "landed.receipts.model.Receipt.done",
        "landed.task.spec.TaskSpec.proof_plan",  # a model's fields, not only its methods
        "landed.task.acts.act",
    )
    for name in names:
        assert f'id="{name}"' in api, f"the API page does not document {name}"
    assert (site / "getting-started" / "index.html").is_file()
