"""``landed exporter``: the scorecard from the ledger on /metrics, and a page on /.

Every scrape first reads what was appended since the last one (bounded pages), then serves the
sums. A ledger that cannot be read leaves the sums as they were and says so in
``landed_ledger_up 0``: a scrape never fails because the ledger did. The sums and cursors are
saved to a state file (landed.telemetry.state) every few seconds and at stop, and a start reads
on from it when the ledger bears it out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

from aiohttp import web
from prometheus_client import CollectorRegistry

from landed.ledger.base import LedgerError
from landed.ledger.factory import default_url, open_scan
from landed.ledger.scan import shown
from landed.telemetry.aggregate import Board
from landed.telemetry.chain_reader import ChainCollector, ChainReader
from landed.telemetry.heads import HeadsCollector
from landed.telemetry.openmetrics import negotiate, render
from landed.telemetry.page import render_page
from landed.telemetry.reader import Reader
from landed.telemetry.resume import resume, snapshot
from landed.telemetry.scorecard_metrics import ScorecardCollector
from landed.telemetry.settings import ExporterSettings
from landed.telemetry.state import StateRefused, default_state_path, write_state

__all__ = ["Exporter", "serve_beside"]

log = logging.getLogger("landed.telemetry")


class Exporter:
    """Owns the board, its reader and the HTTP server; ``start`` catches up, then serves."""

    def __init__(self, settings: ExporterSettings) -> None:
        self.settings = settings
        self.ledger_url = settings.ledger_url or default_url()
        self.ledger_shown = shown(self.ledger_url)
        self.board = Board(settings.max_label_values, recent=settings.recent)
        self.collector = ScorecardCollector(self.board)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        self.reader = Reader(open_scan(self.ledger_url), self.board, settings.claim_lag_seconds)
        self.chain = ChainReader(self.reader.scan, settings.head_trust(), settings.foreign_after)
        self.registry.register(ChainCollector(self.chain))
        self.heads = HeadsCollector(self.ledger_url, settings.head_trust())
        self.registry.register(self.heads)
        self.catch_up_seconds = 0.0
        self.last_error = ""
        default = default_state_path(self.ledger_url)
        self.state_path = (settings.state_path or default) if settings.use_state else None
        #: Whether the start read on from the saved state; else why not ("": there was none).
        self.resumed = False
        self.state_refused = ""
        self._saver: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._rendered: dict[bool, tuple[tuple[object, ...], bytes]] = {}
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def refresh(self, max_pages: int | None = None) -> None:
        """Read what is new; any failure is ``landed_ledger_up 0`` and a log line, not a raise."""
        async with self._lock:
            try:
                await self.reader.read(max_pages)
                await self.heads.read()
            except Exception as exc:  # a scrape must answer whatever the ledger did
                if self.collector.up or str(exc) != self.last_error:
                    log.warning("landed exporter: the ledger could not be read: %s", exc)
                self.collector.up = False
                self.last_error = str(exc)
                return
            self.collector.up = True
            self.last_error = ""
            await self.chain.read_or_flag(max_pages)

    async def start(self) -> str:
        """Read on from the saved state (else catch up with the whole ledger), then listen;
        returns the URL served."""
        started = time.perf_counter()
        if self.state_path is not None:
            await self._resume(self.state_path)
        await self.refresh()
        self.catch_up_seconds = time.perf_counter() - started
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/", self._page)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.host, self.settings.port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        port = sockets[0].getsockname()[1] if sockets else self.settings.port
        self.url = f"http://{self.settings.host}:{port}/"
        if self.state_path is not None:
            self._saver = asyncio.create_task(self._save_every())
        return self.url

    async def stop(self) -> None:
        """Stop serving, save the state (a clean stop resumes where it stood), close the scan."""
        if self._saver is not None:
            self._saver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._saver
            self._saver = None
            await self.save_state()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.reader.scan.close()

    async def _resume(self, path: Path) -> None:
        """Take up the saved state if the ledger bears it out; else log why and read it all."""
        async with self._lock:
            try:
                board, why = await resume(path, self.reader, self.chain, self.settings)
            except (ValueError, LedgerError) as exc:  # StateRefused, or a ledger not read
                board, why = None, str(exc)
            if board is not None:
                self.board = self.collector.board = board
                self.resumed = True
            elif why:
                self.state_refused = why
                log.warning(
                    "landed exporter: the saved state %s is not used (%s); reading the ledger "
                    "from its start",
                    path,
                    why,
                )

    async def save_state(self) -> None:
        """Save the sums and cursors (atomically); a failure is a log line, never a raise."""
        path = self.state_path
        if path is None or not self.collector.up:
            return
        async with self._lock:  # no read moves a cursor while the state is taken
            try:
                state = await snapshot(self.reader, self.chain, self.settings, self.ledger_shown)
                await asyncio.to_thread(write_state, path, state)
            except (OSError, LedgerError, StateRefused) as exc:
                log.warning("landed exporter: the state could not be saved to %s: %s", path, exc)

    async def _save_every(self) -> None:
        while True:
            await asyncio.sleep(self.settings.state_every_seconds)
            await self.save_state()

    async def scrape(self, openmetrics: bool = False) -> bytes:
        await self.refresh(self.settings.max_pages_per_scrape)
        # Rendering costs as much as the series, not the ledger; a scrape that found nothing
        # new serves the text of the last one (one per format).
        key = (self.board.version, self.collector.up, *self.chain.key(), self.heads.version)
        last = self._rendered.get(openmetrics)
        if last is None or key != last[0]:
            last = self._rendered[openmetrics] = (key, render(self.registry, openmetrics))
        return last[1]

    async def _metrics(self, request: web.Request) -> web.Response:
        openmetrics, content_type = negotiate(request.headers.get("Accept", ""))
        body = await self.scrape(openmetrics)
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _page(self, request: web.Request) -> web.Response:
        await self.refresh(self.settings.max_pages_per_scrape)
        html = render_page(
            self.board,
            up=self.collector.up,
            error=self.last_error,
            ui=self.settings.temporal_ui,
            namespace=self.settings.namespace,
        )
        return web.Response(text=html, content_type="text/html", charset="utf-8")


async def serve_beside(
    ledger_url: str, temporal_ui: str | None, port: int, head_keys: list[Path] | None = None
) -> Exporter:
    """The exporter that ``landed dev`` and ``landed demo`` start beside their stack, on
    ``port`` (0: a free one), trusting the stack's runner head keys; LANDED_EXPORTER__*
    settings apply otherwise."""
    overrides: dict[str, object] = {"ledger_url": ledger_url, "port": port}
    if head_keys:
        overrides["head_keys"] = head_keys
    if temporal_ui:
        overrides["temporal_ui"] = temporal_ui
    exporter = Exporter(ExporterSettings(**overrides))  # type: ignore[arg-type]
    await exporter.start()
    return exporter
