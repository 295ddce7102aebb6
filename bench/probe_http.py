"""``http`` probes against a local HTTP server, beside raw aiohttp and httpx GETs at the same
concurrency.

Each probe is a full ``observe()``: source lookup, GET, bounded read, sha256, expectation,
redaction and a JSON-ready Observation. The server runs in its own process (a minimal
asyncio HTTP/1.1 keep-alive responder), so it does not share the benchmark's event loop.

The baseline is raw aiohttp GETs at the same concurrency through one shared session with
landed's settings (the transport the probes use, without landed's work). Raw httpx GETs are
printed too, through single-connection clients, one per lane, and through one shared client.

Targets (issue 3): >= 2,000 probes/s with bounded concurrency, and memory flat over 50,000
probes (RSS at start, middle and end; "flat" here: end - middle under 20 MB).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import aiohttp
import httpx

from bench._probe_common import cpu_line, report, rss_mb, run_bounded
from landed.probes.contract import Contains, HttpProbe
from landed.probes.observe import observe
from landed.probes.sources import SourceRegistry

N = int(os.environ.get("LANDED_BENCH_HTTP_N", "50000"))
BASELINE_N = int(os.environ.get("LANDED_BENCH_HTTP_BASELINE_N", "10000"))
CONCURRENCY = int(os.environ.get("LANDED_BENCH_HTTP_CONCURRENCY", "32"))
TARGET_RATE = 2_000.0
TARGET_GROWTH_MB = 20.0

_SERVER = r"""
import asyncio
BODY = b"<h1>Team plan</h1> order 45 landed"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(BODY)
async def handle(reader, writer):
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(HEAD + BODY)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()
async def serve():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=512)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(serve())
"""


async def _landed(base: str) -> tuple[float, float, list[float]]:
    probe = HttpProbe(source="site", url="/pricing")
    expect = Contains(value="Team plan")
    marks: list[float] = []
    failures = 0

    async with SourceRegistry({"site": {"url": base, "pool_size": CONCURRENCY}}) as registry:

        async def one(_i: int) -> None:
            nonlocal failures
            obs = await observe(probe, expect, registry=registry, observer="bench")
            if obs.outcome.value != "pass":
                failures += 1

        await run_bounded(200, CONCURRENCY, one)  # open the connections first
        marks.append(rss_mb())

        def progress(done: int) -> None:
            if done == N // 2:
                marks.append(rss_mb())

        cpu = time.process_time()
        elapsed = await run_bounded(N, CONCURRENCY, one, progress)
        cpu = time.process_time() - cpu
        marks.append(rss_mb())
    if failures:
        raise SystemExit(f"{failures} probes did not pass; the benchmark measured errors")
    return N / elapsed, cpu / N * 1e6, marks


async def _aiohttp_baseline(base: str) -> tuple[float, float]:
    """Raw aiohttp GETs through one shared session with the settings landed's sources use."""
    none = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=None, sock_read=None)
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=CONCURRENCY),
        timeout=none,
        cookie_jar=aiohttp.DummyCookieJar(),
    )
    url = base + "/pricing"

    async def one(_i: int) -> None:
        async with session.get(url, allow_redirects=False) as resp:
            body = await resp.read()
            if resp.status != 200 or b"Team plan" not in body:
                raise SystemExit(f"the baseline GET failed: {resp.status}")

    try:
        await run_bounded(200, CONCURRENCY, one)
        cpu = time.process_time()
        elapsed = await run_bounded(BASELINE_N, CONCURRENCY, one)
        cpu = time.process_time() - cpu
    finally:
        await session.close()
    return BASELINE_N / elapsed, cpu / BASELINE_N * 1e6


async def _baseline(base: str, lanes: bool) -> tuple[float, float]:
    """Raw httpx GETs: one single-connection client per lane, or one shared client."""
    count = CONCURRENCY if lanes else 1
    per = 1 if lanes else 100
    limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
    clients = [httpx.AsyncClient(limits=limits, trust_env=False) for _ in range(count)]
    idle = list(clients)

    async def one(_i: int) -> None:
        client = idle.pop() if lanes else clients[0]
        try:
            resp = await client.get(base + "/pricing")
            resp.raise_for_status()
            _ = b"Team plan" in resp.content
        finally:
            if lanes:
                idle.append(client)

    try:
        await run_bounded(200, CONCURRENCY, one)
        cpu = time.process_time()
        elapsed = await run_bounded(BASELINE_N, CONCURRENCY, one)
        cpu = time.process_time() - cpu
    finally:
        for client in clients:
            await client.aclose()
    return BASELINE_N / elapsed, cpu / BASELINE_N * 1e6


def main(argv: list[str] | None = None) -> int:
    server = subprocess.Popen([sys.executable, "-c", _SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base = f"http://127.0.0.1:{int(server.stdout.readline())}"
        time.sleep(0.1)
        rate, cpu_us, marks = asyncio.run(_landed(base))
        baseline, baseline_cpu_us = asyncio.run(_aiohttp_baseline(base))
        lanes, _ = asyncio.run(_baseline(base, lanes=True))
        shared, _ = asyncio.run(_baseline(base, lanes=False))
    finally:
        server.terminate()
        server.wait(5)
    start, middle, end = marks
    growth = end - middle
    ok_rate = rate >= TARGET_RATE
    ok_flat = growth < TARGET_GROWTH_MB
    report(
        f"http probes (concurrency {CONCURRENCY}, {N:,} probes)",
        rate,
        baseline,
        "probes/s",
        f">= {TARGET_RATE:,.0f}/s",
        ok_rate,
        rate / baseline,
    )
    cpu_line("http", cpu_us, baseline_cpu_us)
    print(
        f"  raw httpx, one single-connection client per lane: {lanes:,.1f} GETs/s (landed ratio "
        f"{rate / lanes:.2f}); through one shared client: {shared:,.1f} GETs/s (landed ratio "
        f"{rate / shared:.2f})",
        flush=True,
    )
    print(
        f"http probes RSS: start {start:.1f} MB, middle {middle:.1f} MB, end {end:.1f} MB | "
        f"growth middle->end {growth:+.1f} MB | target < {TARGET_GROWTH_MB:.0f} MB | "
        f"{'PASS' if ok_flat else 'MISS'}",
        flush=True,
    )
    return 0 if ok_rate and ok_flat else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
