"""The exporter's page in a real browser: what it shows is the ledger, and nothing runs."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers.exporter import Place, exporter_on
from helpers.scorecard import settled

from landed.ledger.base import Ledger
from landed.receipts.grading import evaluate

pytestmark = pytest.mark.slow

NASTY = '<img src=x onerror="document.title=1">'


class _Tables(HTMLParser):
    """The text of each cell of each table with an id, the link of each cell, every tag seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.links: list[str] = []
        self.tags: set[str] = set()
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        found = dict(attrs)
        if tag == "table" and found.get("id"):
            self._table = found["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
        elif tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None


async def _chromium(*args: str) -> str:
    browser = shutil.which("chromium")
    assert browser, "chromium is not installed: run `make system-deps`"
    proc = await asyncio.create_subprocess_exec(
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        *args,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0
    return out.decode()


async def test_the_page_shows_the_ledger_escaped(sqlite_place: Place, tmp_path: Path) -> None:
    from landed.ledger.factory import open_ledger

    receipts = [
        settled("page-1", owner="alice", loop="nightly"),
        settled(NASTY, owner="<b>bob</b>", verdict="held"),
        settled("page-3", owner="carol", verdict="blocked", claimed="blocked"),
        settled("page-4", owner="dave", verdict="held"),
        settled("page-4", owner="dave", attempt=2),  # its hold was released by a later settle
    ]
    ledger: Ledger
    async with await open_ledger(sqlite_place.url) as ledger:
        await ledger.append_many(receipts)
        stored = [r async for r in ledger.iter_receipts()]
    exporter = exporter_on(sqlite_place, temporal_ui="http://ui.example:8233")
    url = await exporter.start()
    try:
        dom = await _chromium("--dump-dom", url)
        await _chromium("--window-size=1000,800", f"--screenshot={tmp_path / 'page.png'}", url)
    finally:
        await exporter.stop()
    page = _Tables()
    page.feed(dom)
    card = {row[0]: row[1] for row in page.tables["scorecard"]}
    graded = [evaluate(r) for r in stored]
    assert card["settled"] == str(len(stored))
    assert card["done claimed"] == str(sum(g.claims_done for g in graded))
    assert card["done proven (P3+)"] == str(sum(g.done_at_p3 for g in graded))
    recent = [(row[0], row[1], row[2]) for row in page.tables["recent"][1:]]
    assert recent == [(r.task_id, r.verdict, r.owner) for r in reversed(stored)]
    assert [row[0] for row in page.tables["holds"][1:]] == [NASTY]
    # The markup in a task id and an owner is text on the page, never an element.
    assert "img" not in page.tags and "b" not in page.tags
    assert "http://ui.example:8233/namespaces/default/workflows/page-1" in page.links
    assert (tmp_path / "page.png").stat().st_size > 10_000
