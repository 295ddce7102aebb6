"""The documentation runs as written: every block marked ``<!-- run -->`` in README.md and
docs/*.md runs against one real ``landed dev``, page by page, as a user would type it, and
exits and prints what the page says (tests/helpers/doc_blocks.py reads the markers).

The stack is examples/first_task's ``./dev.sh`` in a copy of examples/, with that task already
settled once, so a page may read a ledger that holds a receipt. Each page runs in a directory
of its own whose ``examples`` is that copy; a block gets ``landed dev``'s settings
(TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, LANDED_LEDGER_URL) and the first task's source, as a
shell beside ``./dev.sh`` has them, and the venv on PATH."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.doc_blocks import Block, MarkerError, blocks, matches
from helpers.examples import EXAMPLES, ROOT, Example, example_stack, user_env

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [b for page in PAGES for b in blocks(page, page.relative_to(ROOT).as_posix())]


@dataclass
class DocsStack:
    """The running first task's stack, the examples copy beside it, and each page's folder."""

    example: Example
    root: Path

    def env(self) -> dict[str, str]:
        ready = self.example.ready
        shop = self.example.folder / "shop" / "orders.db"
        return {
            **user_env(),
            "TEMPORAL_ADDRESS": ready["temporal"],
            "TEMPORAL_NAMESPACE": ready["namespace"],
            "LANDED_LEDGER_URL": ready["ledger"],
            "LANDED_SOURCES__SHOP_DB__URL": f"sqlite:///{shop}",
        }

    def folder(self, page: str) -> Path:
        """The page's working directory, made on its first block."""
        folder = self.root / "pages" / page.replace("/", "_")
        if not folder.is_dir():
            folder.mkdir(parents=True)
            (folder / "examples").symlink_to(self.root / "examples")
        return folder


@pytest.fixture(scope="module")
def docs_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocsStack]:
    root = tmp_path_factory.mktemp("docs-run")
    ignore = shutil.ignore_patterns("first_task", "shop", "outbox", ".landed", "__pycache__")
    shutil.copytree(EXAMPLES, root / "examples", ignore=ignore)
    with example_stack("first_task", root / "examples") as example:
        seeded = example.run("landed", "submit", "task.json", "--wait", timeout=240)
        assert seeded.returncode == 0, seeded.stdout + seeded.stderr[-3000:]
        yield DocsStack(example, root)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.name)
def test_the_block_runs_as_the_page_says(block: Block, docs_stack: DocsStack) -> None:
    folder = docs_stack.folder(block.page)
    script = folder / ("block.sh" if block.language == "bash" else "block.py")
    script.write_text(block.code)
    argv = ["bash", "-euo", "pipefail"] if block.language == "bash" else [sys.executable]
    done = subprocess.run(
        [*argv, str(script)],
        cwd=folder,
        env=docs_stack.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = f"{block.name} printed:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == block.exit, f"exit {done.returncode}, not {block.exit}; {said}"
    if block.output is not None:
        assert matches(block.output, done.stdout), f"expected:\n{block.output}\n{said}"


def test_the_docs_keep_their_runnable_blocks() -> None:
    # The marked blocks cannot quietly drop to none; pages with the most to run keep theirs.
    assert len(BLOCKS) >= 15, [b.name for b in BLOCKS]
    pages = {b.page for b in BLOCKS}
    assert {"README.md", "docs/getting-started.md", "docs/checker.md"} <= pages, pages
    assert {b.language for b in BLOCKS} == {"bash", "python"}


def test_a_marker_in_another_form_names_its_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n<!-- run: exit=1 -->\n```bash\ntrue\n```\n")
    with pytest.raises(MarkerError, match=r"page\.md:2: .* is no run marker"):
        blocks(page, "page.md")
    page.write_text("<!-- run -->\n```console\n$ true\n```\n")
    with pytest.raises(MarkerError, match="not 'console'"):
        blocks(page, "page.md")
    page.write_text("```text\nx\n```\n<!-- output -->\n```text\nx\n```\n")
    with pytest.raises(MarkerError, match="must follow a run block"):
        blocks(page, "page.md")


def test_a_marked_block_carries_its_exit_and_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    text = "```bash\n<!-- run -->\n```\n\n<!-- run: expect-exit=3 -->\n```python\nprint(1)\n```\n"
    page.write_text(text + "\n<!-- output -->\n```text\n1\n```\n")
    (block,) = blocks(page, "page.md")  # the marker inside an unmarked block is its text
    assert (block.name, block.language, block.code) == ("page.md:6", "python", "print(1)\n")
    assert (block.exit, block.output) == (3, "1\n")


@pytest.mark.parametrize(
    ("expected", "printed", "matched"),
    [
        ("a\nb\n", "a\nb\n", True),
        ("a\nb\n", "a\nc\n", False),
        ("a\n...\nd\n", "a\nb\nc\nd\n", True),
        ("a\n...\nd\n", "a\nb\nc\n", False),
        ("a\n...\n", "a\n", True),
        ("at ... now\n", "at 16:40 now  \n", True),
        ("at ... now\n", "at 16:40\nnow\n", False),
        ("a\n", "a\nb\n", False),
    ],
)
def test_the_output_wildcards(expected: str, printed: str, matched: bool) -> None:
    assert matches(expected, printed) is matched


def test_every_marked_block_is_named_by_its_page_and_line() -> None:
    for block in BLOCKS:
        lines = (ROOT / block.page).read_text().splitlines()
        assert lines[block.line - 1].startswith(f"```{block.language}"), block.name
