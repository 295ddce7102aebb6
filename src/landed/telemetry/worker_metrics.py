"""A worker role's metrics port: Temporal's SDK metrics, the role's health, and its probes.

The SDK's core serves its metrics (``Runtime`` with ``PrometheusConfig``) on a loopback port of
its own; this server answers on the role's port with that text plus ``landed_worker_up`` and
``landed_worker_last_poll_timestamp_seconds``, so one scrape target per role holds both. The
same server answers ``/healthz`` and ``/readyz`` (see ``health``): one port per pod for the
scrape and the probes, and a role that serves metrics but fails its probes is not possible.
"""

from __future__ import annotations

import re
import socket
import time

import aiohttp
from aiohttp import web
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from landed.telemetry.health import Readiness
from landed.telemetry.worker_text import page

__all__ = ["WorkerMetrics"]

_MAX_BYTES = 8 * 1024 * 1024
_POLLS = re.compile(
    r"^temporal_(?:workflow|activity)_task_queue_poll_succeed_total\{[^}]*\} (\S+)$", re.M
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class WorkerMetrics:
    """Owns the role's SDK runtime and its metrics server; ``start`` returns the URL."""

    def __init__(
        self, role: str, port: int, host: str = "127.0.0.1", *, ready_within_s: float = 15.0
    ) -> None:
        self.role = role
        self.readiness = Readiness(ready_within_s)
        self._host, self._port = host, port
        self._core = f"127.0.0.1:{_free_port()}"
        self.runtime = Runtime(
            telemetry=TelemetryConfig(
                metrics=PrometheusConfig(
                    bind_address=self._core,
                    counters_total_suffix=True,
                    durations_as_seconds=True,
                ),
                global_tags={"landed_role": role},
            )
        )
        self.ready = False
        self.last_poll = 0.0
        self._polls = -1.0
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port).start()
        self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5))
        return f"http://{self._host}:{self._port}/metrics"

    def polling(self) -> None:
        """The worker has started polling its queue."""
        self.ready = True
        self.last_poll = time.time()
        self.readiness.polling = True
        self.readiness.last_contact = time.monotonic()

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        problems = await self.readiness.problems()
        if problems:
            return web.Response(status=503, text="not ready\n" + "\n".join(problems) + "\n")
        return web.Response(text="ready\n")

    async def stop(self) -> None:
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _core_text(self) -> str:
        assert self._http is not None
        try:
            async with self._http.get(f"http://{self._core}/metrics") as resp:
                raw = await resp.content.read(_MAX_BYTES + 1)
        except (aiohttp.ClientError, TimeoutError):
            return ""
        return raw[:_MAX_BYTES].decode(errors="replace") if len(raw) <= _MAX_BYTES else ""

    async def _metrics(self, request: web.Request) -> web.Response:
        core = await self._core_text()
        polls = sum(float(v) for v in _POLLS.findall(core))
        # A poll that brought a task moves the SDK's counters: seen here at scrape time.
        if self._polls >= 0 and polls > self._polls:
            self.last_poll = time.time()
        self._polls = polls
        up = 1 if self.ready and core else 0
        role = self.role
        own = (
            "# HELP landed_worker_up 1 while the role's worker runs and its SDK metrics answer.\n"
            "# TYPE landed_worker_up gauge\n"
            f'landed_worker_up{{role="{role}"}} {up}\n'
            "# HELP landed_worker_last_poll_timestamp_seconds When the worker last received a "
            "task from a poll (or started polling).\n"
            "# TYPE landed_worker_last_poll_timestamp_seconds gauge\n"
            f'landed_worker_last_poll_timestamp_seconds{{role="{role}"}} {self.last_poll}\n'
        )
        body, content_type = page(core, own, self.role, request.headers.get("Accept", ""))
        return web.Response(body=body, headers={"Content-Type": content_type})
