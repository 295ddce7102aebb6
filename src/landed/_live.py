"""``--live``: re-read every http_contains proof over HTTP and record what was seen on the proof."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import httpx

from landed._intake import FastProof, FastReceipt
from landed._receipt import ProofItem, Receipt

__all__ = ["LiveOptions", "LiveReader", "live_targets"]

_MAX_BODY: Final = 4 << 20
_USER_AGENT: Final = "landed-check (re-reading a cited http_contains proof)"


@dataclass(frozen=True, slots=True)
class LiveOptions:
    """How hard ``--live`` may push: requests in flight, seconds per request, bytes per body."""

    concurrency: int = 32
    timeout_s: float = 10.0
    max_body_bytes: int = _MAX_BODY


Item = FastProof | ProofItem


def live_targets(records: Sequence[FastReceipt | Receipt]) -> list[Item]:
    """The http_contains proofs of a batch, in order."""
    return [
        item
        for record in records
        for item in record.proof
        if item.kind.strip().lower() == "http_contains"
    ]


class LiveReader:
    """HTTP clients for the whole run; ``reread`` records an observation on each proof as
    ``proof.landed["live"] = {"ok", "rule", "reason", "status"}``. Only a fetched page that
    contains the expected text is ``ok``; anything that could not be checked is not.

    ``concurrency`` workers each own a client with one connection: httpx's connection pool
    costs more CPU per request the more connections it juggles, so many small pools re-read
    about twice as many proofs per second as one large one."""

    def __init__(self, options: LiveOptions) -> None:
        self._options = options
        tls = httpx.create_ssl_context()  # one TLS context shared by every client
        self._clients = [
            httpx.AsyncClient(
                timeout=httpx.Timeout(options.timeout_s),
                follow_redirects=True,
                verify=tls,
                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                headers={"user-agent": _USER_AGENT},
            )
            for _ in range(max(1, options.concurrency))
        ]

    async def aclose(self) -> None:
        await asyncio.gather(*(client.aclose() for client in self._clients))

    async def reread(self, items: Sequence[Item], progress: Callable[[int], None] | None) -> None:
        # The same (url, text) cited twice in a batch is fetched once: the page is one state.
        pending: dict[tuple[str, str], list[Item]] = {}
        for item in items:
            ref = (item.ref or "").strip()
            expect = item.expect
            if not isinstance(expect, str) or not expect.strip():
                _record(item, False, "DOD-4", "no expect text to look for, so nothing to re-read")
                continue
            if not ref.lower().startswith(("http://", "https://")):
                _record(item, False, "DOD-5", f"ref {ref[:80]!r} is not an http(s) URL")
                continue
            pending.setdefault((ref, expect), []).append(item)
        jobs = iter(pending.items())  # shared by the workers; each job is taken once

        async def worker(client: httpx.AsyncClient) -> None:
            for (url, expect), group in jobs:
                ok, rule, reason, status = await self._fetch(client, url, expect)
                for item in group:
                    _record(item, ok, rule, reason, status)
                if progress is not None:
                    progress(len(group))

        await asyncio.gather(*(worker(client) for client in self._clients[: len(pending)]))

    async def _fetch(
        self, client: httpx.AsyncClient, url: str, expect: str
    ) -> tuple[bool, str, str, int | None]:
        try:
            async with client.stream("GET", url) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= self._options.max_body_bytes:
                        break
                status = response.status_code
                encoding = response.encoding or "utf-8"
        except httpx.TimeoutException:
            why = f"{url} did not answer within {self._options.timeout_s:g}s"
            return False, "DOD-5", why, None
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            why = f"{url} could not be read ({type(exc).__name__}: {str(exc)[:120]})"
            return False, "DOD-5", why, None
        if status >= 400:
            return False, "DOD-5", f"{url} answered HTTP {status}", status
        try:
            text = bytes(body).decode(encoding, errors="replace")
        except LookupError:  # a charset Python does not know: read it as UTF-8
            text = bytes(body).decode("utf-8", errors="replace")
        if expect in text:
            return True, "", f"{url} contains the expected text", status
        shown = expect if len(expect) <= 60 else expect[:59] + "\u2026"
        if len(body) >= self._options.max_body_bytes:
            why = f"the first {len(body):,} bytes of {url} do not contain {shown!r}"
        else:
            why = f"{url} no longer contains {shown!r}"
        return False, "DOD-4", why, status


def _record(item: Item, ok: bool, rule: str, reason: str, status: int | None = None) -> None:
    observation: dict[str, Any] = {"ok": ok, "rule": rule, "reason": reason, "status": status}
    item.landed = {**(item.landed or {}), "live": observation}
