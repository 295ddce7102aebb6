"""``landed check --live`` against a local HTTP server, beside bare aiohttp and httpx GET loops.

Target (issue 2): >= 1,000 proofs/s. The server is a small asyncio HTTP/1.1 server in its own
process on 127.0.0.1; the checker runs ``run_check(..., live=True)``, the function behind
``landed check --live``, in another. The baseline fetches the same URLs with one aiohttp session
(the transport ``--live`` uses) at the same concurrency and does nothing else; a bare httpx loop
is printed beside it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

N = int(os.environ.get("LANDED_BENCH_LIVE_N", "5000"))
CONCURRENCY = 32
TARGET = 1_000.0

_CHILD = r"""
import asyncio, os, sys, time
mode, path, base = sys.argv[1], sys.argv[2], sys.argv[3]
n, concurrency = int(sys.argv[4]), int(sys.argv[5])
if mode == "check":
    from landed.cli.check import run_check
    with open(os.devnull, "w") as out:
        start = time.perf_counter()
        code = run_check(
            path, live=True, live_private=True, as_json=True, out=out, concurrency=concurrency
        )
        elapsed = time.perf_counter() - start
elif mode == "aiohttp":
    import aiohttp
    async def main():
        # concurrency workers share one pool, as --live does, and do nothing but GET
        jobs = iter(range(n))
        connector = aiohttp.TCPConnector(limit=concurrency)
        none = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=None, sock_read=None)
        jar = aiohttp.DummyCookieJar()  # the session settings --live uses
        async with aiohttp.ClientSession(connector=connector, timeout=none, cookie_jar=jar) as s:
            async def worker():
                for i in jobs:
                    async with s.get(f"{base}/p/{i}") as r:
                        assert f"plan {i % 5}" in await r.text()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
    start = time.perf_counter()
    asyncio.run(main())
    elapsed = time.perf_counter() - start
    code = 0
else:
    import httpx
    async def main():
        gate = asyncio.Semaphore(concurrency)
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=10) as client:
            async def one(i):
                async with gate:
                    r = await client.get(f"{base}/p/{i}")
                    assert f"plan {i % 5}" in r.text
            await asyncio.gather(*(one(i) for i in range(n)))
    start = time.perf_counter()
    asyncio.run(main())
    elapsed = time.perf_counter() - start
    code = 0
print(f"{n} {elapsed} {code}")
"""


class _Http(asyncio.Protocol):
    """Just enough HTTP/1.1 keep-alive: GET /p/N answers a page that says "plan N % 5"."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            path = head.split(b" ", 2)[1]
            number = int(path.rsplit(b"/", 1)[1]) if path.startswith(b"/p/") else -1
            body = f"<html><h1>plan {number % 5}</h1></html>".encode()
            self.transport.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\n"
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )


async def _serve(port_file: str) -> None:
    server = await asyncio.get_running_loop().create_server(_Http, "127.0.0.1", 0)
    Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


def _receipts(path: Path, base: str, n: int) -> None:
    with path.open("wb") as out:
        for i in range(n):
            url = f"{base}/p/{i}"
            record = {
                "task_id": f"live-{i}",
                "owner": "worker-a",
                "outcome": f"Page {i} on the local benchmark server shows its plan",
                "target": url,
                "claimed_status": "done",
                "report": "Published and confirmed.",
                "proof": [
                    {
                        "kind": "http_contains",
                        "ref": url,
                        "expect": f"plan {i % 5}",
                        "checked_by": "runner",
                        "result": "pass",
                    }
                ],
            }
            out.write(orjson.dumps(record) + b"\n")


def _run(mode: str, path: Path, base: str) -> tuple[float, int]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(path), base, str(N), str(CONCURRENCY)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    count, elapsed, code = proc.stdout.split()
    return int(count) / float(elapsed), int(code)


def main(argv: list[str] | None = None) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port"
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port_file)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(200):
                if port_file.exists() and port_file.read_text():
                    break
                time.sleep(0.05)
            base = f"http://127.0.0.1:{port_file.read_text()}"
            path = Path(tmp) / "live.jsonl"
            _receipts(path, base, N)
            baseline, _ = _run("aiohttp", path, base)
            rate, code = _run("check", path, base)
            httpx_rate, _ = _run("httpx", path, base)
        finally:
            server.terminate()
            server.wait(timeout=10)
    ratio = rate / baseline
    ok = rate >= TARGET and code == 0
    print(
        f"  landed check --live        {rate:>10,.0f} proofs/s   ({N:,} distinct URLs, "
        f"concurrency {CONCURRENCY}, exit {code})"
    )
    print(f"  baseline: bare aiohttp GETs{baseline:>10,.0f} GETs/s (the transport landed uses)")
    print(f"  bare httpx GETs            {httpx_rate:>10,.0f} GETs/s", end="")
    print(f" (landed ratio {rate / httpx_rate:.2f})")
    print(f"  ratio {ratio:.2f}x; target >= {TARGET:,.0f} proofs/s: {'PASS' if ok else 'MISS'}")
    print(json.dumps({"figure": rate, "baseline": baseline, "ratio": ratio, "pass": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(_serve(sys.argv[2]))
    else:
        sys.exit(main(sys.argv[1:]))
