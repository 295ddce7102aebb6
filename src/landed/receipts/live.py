"""``--live``: re-read every http_contains proof over HTTP and record what was seen on the proof."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Sequence
from typing import Any, Final

import aiohttp
import aiohttp.abc
import yarl

from landed.receipts.grading import is_weak_label
from landed.receipts.intake import FastProof, FastReceipt
from landed.receipts.live_options import LiveOptions
from landed.receipts.model import ProofItem, Receipt

__all__ = ["LiveOptions", "LiveReader", "live_targets"]

_USER_AGENT: Final = "landed-check (re-reading a cited http_contains proof)"
_MAX_REDIRECTS: Final = 20
_REDIRECTS: Final = frozenset((301, 302, 303, 307, 308))


class _PublicOnly(aiohttp.abc.AbstractResolver):
    """Resolves as usual, and refuses a name that leads to a non-public address."""

    def __init__(self) -> None:
        self._inner = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[Any]:
        found = await self._inner.resolve(host, port, family)
        for entry in found:
            _refuse_private(str(entry["host"]), host)
        return found

    async def close(self) -> None:
        await self._inner.close()


def _refuse_private(address: str, name: str) -> None:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return  # a name, checked when it is resolved
    if not ip.is_global:
        raise aiohttp.ClientConnectionError(
            f"{name} is at {address}, not a public address; landed check --live reads public "
            "pages only (--live-private allows the rest)"
        )


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
    """One kept-alive HTTP session for the whole run; ``reread`` records an observation on each
    proof as ``proof.landed["live"] = {"ok", "rule", "reason", "status"}``. Only a fetched page
    that contains the expected text is ``ok``; anything that could not be checked is not.

    The session's pool holds at most ``concurrency`` connections and ``concurrency`` workers
    share it; aiohttp's C HTTP parser keeps the per-request cost low enough that one shared
    pool is the fast arrangement. It opens on the first ``reread`` (an aiohttp session belongs
    to the event loop it was made on)."""

    def __init__(self, options: LiveOptions) -> None:
        self._options = options
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            resolver = None if self._options.allow_private else _PublicOnly()
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=max(1, self._options.concurrency), resolver=resolver
                ),
                # Every request runs under its own asyncio.timeout, so no session timers.
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=None, sock_connect=None, sock_read=None
                ),
                headers={"user-agent": _USER_AGENT},
                cookie_jar=aiohttp.DummyCookieJar(),  # pages never see each other's cookies
                trust_env=False,
            )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def reread(self, items: Sequence[Item], progress: Callable[[int], None] | None) -> None:
        # The same (url, text) cited twice in a batch is fetched once: the page is one state.
        pending: dict[tuple[str, str], list[Item]] = {}
        for item in items:
            ref = (item.ref or "").strip()
            expect = item.expect
            if not isinstance(expect, str) or not expect.strip() or is_weak_label(expect):
                _record(item, False, "DOD-4", "no expect text to look for, so nothing to re-read")
                continue
            if not ref.lower().startswith(("http://", "https://")):
                # A ref such as "site:/pricing" names a configured source, not a URL: landed
                # check cannot re-read it, so it leaves the proof as it is (never upgrading it,
                # never inventing a failure) and says so.
                why = (
                    f"ref {ref[:80]!r} is not an http(s) URL, so it could not be re-read; "
                    "the proof stands as the receipt gives it"
                )
                item.landed = {
                    **(item.landed or {}),
                    "live": {"ok": None, "skipped": True, "rule": "DOD-5", "reason": why},
                }
                continue
            pending.setdefault((ref, expect), []).append(item)
        jobs = iter(pending.items())  # shared by the workers; each job is taken once

        session = self._open()

        async def worker() -> None:
            for (url, expect), group in jobs:
                ok, rule, reason, status = await self._fetch(session, url, expect)
                for item in group:
                    _record(item, ok, rule, reason, status)
                if progress is not None:
                    progress(len(group))

        workers = min(max(1, self._options.concurrency), len(pending))
        await asyncio.gather(*(worker() for _ in range(workers)))

    async def _fetch(
        self, session: aiohttp.ClientSession, url: str, expect: str
    ) -> tuple[bool, str, str, int | None]:
        limit = self._options.max_body_bytes
        try:
            async with asyncio.timeout(self._options.timeout_s):
                target = url
                for _ in range(_MAX_REDIRECTS + 1):
                    if not self._options.allow_private:
                        # An address in the URL itself is not resolved: checked here, at
                        # every hop (a public page can redirect inward).
                        host = yarl.URL(target).host or ""
                        _refuse_private(host.strip("[]"), host)
                    async with session.get(target, allow_redirects=False) as response:
                        location = response.headers.get("location")
                        if response.status in _REDIRECTS and location:
                            target = str(response.url.join(yarl.URL(location)))
                            continue
                        body = bytearray()
                        async for chunk in response.content.iter_any():
                            body += chunk
                            if len(body) >= limit:
                                break
                        status = response.status
                        encoding = response.charset or "utf-8"
                        break
                else:
                    return (
                        False,
                        "DOD-5",
                        f"{url} redirected more than {_MAX_REDIRECTS} times",
                        None,
                    )
        except TimeoutError:
            why = f"{url} did not answer within {self._options.timeout_s:g}s"
            return False, "DOD-5", why, None
        except (aiohttp.ClientError, ValueError) as exc:
            # ValueError: a URL yarl cannot parse (aiohttp's InvalidURL is one too).
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
