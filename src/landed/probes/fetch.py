"""One GET from a source: where a probe's URL may lead, which requests carry the source's
credentials, redirects, a compressed body read to its end, and statuses that observed nothing."""

from __future__ import annotations

import asyncio
import functools
import zlib
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import aiohttp
import yarl

from landed.probes.reading import Capture, Limits, ProbeError
from landed.probes.settings import SourceConfig
from landed.probes.sources import SourceRegistry

__all__ = ["Fetched", "fetch", "target_url"]

_MAX_REDIRECTS = 5


@dataclass
class Fetched:
    status: int
    url: str
    capture: Capture


@functools.lru_cache(maxsize=1024)
def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port


def _is_absolute(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme and parts.netloc)


def target_url(name: str | None, cfg: SourceConfig | None, url: str) -> str:
    """The absolute URL to GET, refusing what the source does not allow (ProbeError): the
    source's URL policy, checked by the verifier before a read and by every read."""
    try:
        return _target_of(name, cfg, url)
    except ValueError as exc:  # urlsplit: a port out of range, a broken IPv6 literal
        if isinstance(exc, ProbeError):
            raise
        shown = url.split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1]
        raise ProbeError(f"{shown!r} is not a valid URL ({exc}); fix the probe's url") from None


def _target_of(name: str | None, cfg: SourceConfig | None, url: str) -> str:
    if _is_absolute(url):
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            raise ProbeError(f"only http and https URLs can be read, not {_display(url)!r}")
        if cfg is None or cfg.allow_absolute_urls:
            return url
        base = cfg.url or ""
        if base and _origin(url) == _origin(base) and _under(url, base):
            return url
        raise ProbeError(
            f"source {name!r} does not allow absolute URLs; give a path relative to its base, "
            f"or set {name}'s allow_absolute_urls = true in the verifier's configuration"
        )
    if cfg is None or not cfg.url:
        raise ProbeError(
            f"{url!r} is relative, so the probe must name an http source whose url is the base"
        )
    if _climbs(urlsplit(url).path) or url.startswith("//"):
        raise ProbeError(f"{url!r} climbs out of the source's base; '..' is not allowed")
    return cfg.url.rstrip("/") + "/" + url.lstrip("/")


def _climbs(path: str) -> bool:
    """A ``..`` segment, as the server may see it: each ``/`` segment percent-decoded (twice,
    for a proxy that decodes once more), with ``\\`` read as a separator. An encoded slash
    stays data inside its segment (an object id like ``..%2Fadmin`` is one segment)."""
    for segment in path.split("/"):
        for text in (segment, unquote(segment), unquote(unquote(segment))):
            if ".." in text.split("\\"):
                return True
    return False


def _under(url: str, base: str) -> bool:
    """``url``'s path lies inside ``base``'s path, checked whole segments at a time after
    decoding, so ``/api/../admin``, ``/api/%2e%2e/admin`` and ``/api-admin`` are all outside."""
    path, root = urlsplit(url).path, urlsplit(base).path.rstrip("/")
    if _climbs(path):
        return False
    decoded = unquote(path)
    return not root or decoded == root or decoded.startswith(root + "/")


async def fetch(
    registry: SourceRegistry, name: str | None, cfg: SourceConfig | None, url: str, limits: Limits
) -> Fetched:
    """GET ``url`` (relative to the source's base), reading at most ``limits.read_limit`` bytes
    and waiting at most ``limits.timeout_s`` for all of it."""
    target = target_url(name, cfg, url)
    try:
        async with asyncio.timeout(limits.timeout_s):
            return await _fetch(registry, name, cfg, target, limits)
    except TimeoutError:
        raise ProbeError(
            f"GET {_display(target)} did not finish within {limits.timeout_s}s; "
            "nothing was observed"
        ) from None


async def _fetch(
    registry: SourceRegistry,
    name: str | None,
    cfg: SourceConfig | None,
    target: str,
    limits: Limits,
) -> Fetched:
    session = registry.http_session(name, cfg)
    url = target
    creds = cfg.auth_headers() if cfg is not None else {}
    base = cfg.url if creds and cfg is not None and cfg.url else None
    home = _origin(base) if base else None
    follow = cfg is not None and cfg.follow_redirects
    for _ in range(_MAX_REDIRECTS + 1):
        # Credentials only travel under the source's own base URL, never to an absolute URL
        # elsewhere (another path of the same host included) or wherever a redirect points.
        at_home = base is not None and _origin(target) == home and _under(target, base)
        headers = creds if at_home else None
        capture = Capture(keep=limits.read_cap, limit=limits.read_limit)
        try:
            async with session.get(_parsed(target), headers=headers, allow_redirects=False) as resp:
                location = resp.headers.get("location")
                if follow and location and resp.status in _REDIRECTS:
                    target = _redirect_target(
                        name, cfg, target, str(resp.url.join(yarl.URL(location)))
                    )
                    continue
                decode = _Decoder(resp.headers.get("content-encoding", ""), capture)
                async for chunk in resp.content.iter_any():
                    decode.feed(chunk)
                decode.end()
                return Fetched(resp.status, str(resp.url), capture)
        except aiohttp.ClientResponseError as exc:
            # Raised while parsing the answer (its status is aiohttp's, not the server's): the
            # parser's own words, without the URL it repeats (query and all).
            detail = (exc.message or type(exc).__name__).splitlines()[0]
            raise ProbeError(
                f"GET {_display(target)} failed: the source sent a malformed response ({detail})"
            ) from None
        except (aiohttp.ClientError, ValueError) as exc:
            # ValueError: a URL yarl cannot parse or a redirect to one.
            detail = str(exc) or type(exc).__name__
            raise ProbeError(f"GET {_display(target)} failed: {detail}") from None
    raise ProbeError(f"GET {_display(url)} redirected more than {_MAX_REDIRECTS} times")


_REDIRECTS: Final = frozenset((301, 302, 303, 307, 308))
# Decompressed at most this much per step, so a small compressed chunk that expands hugely is
# fed to the capture (and stopped at its read limit) a step at a time.
_INFLATE_STEP = 1 << 20


class _Decoder:
    """Feeds a response body to ``capture``, inflating a gzip or deflate one, and refuses a
    compressed body that ends before its compressed stream does (a cut connection) or that
    carries bytes after it. Several gzip members in a row are one body, as RFC 1952 has it;
    deflate comes with a zlib header or, from some servers, without one."""

    def __init__(self, encoding: str, capture: Capture) -> None:
        self._capture = capture
        self._compressed = False
        self._head = b""
        name = encoding.strip().lower()
        if name in ("", "identity"):
            self._kind: str | None = None
        elif name in ("gzip", "x-gzip", "deflate"):
            self._kind = "deflate" if name == "deflate" else "gzip"
        else:
            raise ProbeError(
                f"the response is encoded as {encoding!r}, which the verifier does not read "
                "(it asks for gzip or deflate); nothing was observed"
            )
        self._inflate: Any = None

    def _take(self, data: bytes) -> None:
        if data and not self._capture.feed(data):
            raise ProbeError(
                f"the response passed the read limit of {self._capture.limit} bytes; "
                "nothing whole was read",
                self._capture,
            )

    def _start(self, data: bytes) -> None:
        if self._kind == "gzip":
            self._inflate = zlib.decompressobj(wbits=31)
        elif len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0:
            self._inflate = zlib.decompressobj(wbits=15)  # a zlib header
        else:
            self._inflate = zlib.decompressobj(wbits=-15)  # raw deflate

    def feed(self, chunk: bytes) -> None:
        if self._kind is None:
            self._take(chunk)
            return
        if not chunk:
            return
        self._compressed = True
        # Bytes held back: which deflate it is (or whether another gzip member follows) shows
        # in two bytes, and a chunk may end after one.
        data, self._head = self._head + chunk, b""
        if self._inflate is None:
            if len(data) < 2:
                self._head = data
                return
            self._start(data)
        self._inflate_all(data)

    def _inflate_all(self, data: bytes) -> None:
        try:
            while data:
                if self._inflate.eof:
                    if self._kind == "gzip" and len(data) < 2 and data == b"\x1f":
                        self._head = data
                        return
                    if self._kind == "gzip" and data[:2] == b"\x1f\x8b":
                        self._inflate = zlib.decompressobj(wbits=31)  # the next member
                        continue
                    if data.strip(b"\x00\r\n\t "):
                        raise ProbeError(
                            "the response carries bytes after its compressed body; nothing "
                            "whole was read",
                            self._capture,
                        )
                    return
                out = self._inflate.decompress(data, _INFLATE_STEP)
                self._take(out)
                # Output held back by the step limit comes out with no more input.
                while len(out) == _INFLATE_STEP and not self._inflate.eof:
                    out = self._inflate.decompress(self._inflate.unconsumed_tail, _INFLATE_STEP)
                    self._take(out)
                eof = self._inflate.eof
                data = self._inflate.unused_data if eof else self._inflate.unconsumed_tail
        except zlib.error as exc:
            raise ProbeError(
                f"the response's compressed body cannot be read ({exc}); nothing was observed",
                self._capture,
            ) from None

    def end(self) -> None:
        if self._kind is not None and self._inflate is None and self._head:
            data, self._head = self._head, b""
            self._start(data)
            self._inflate_all(data)
        # An empty body (a 204, a HEAD-like answer) under a gzip header holds nothing to cut.
        cut = self._inflate is not None and (not self._inflate.eof or self._head)
        if self._compressed and cut:
            raise ProbeError(
                "the response's compressed body ended before its end (the connection was cut "
                "short); nothing whole was read",
                self._capture,
            )


def _redirect_target(name: str | None, cfg: SourceConfig | None, at: str, to: str) -> str:
    """Where a redirect leads, if the source allows a probe to read there: a reading of
    another host's (or another path's) page is not a reading of this source."""
    try:
        return target_url(name, cfg, to)
    except ProbeError as exc:
        if cfg is not None and cfg.allow_absolute_urls:
            # Already allowed anywhere: the reason is the URL itself (an ftp: one, say).
            raise ProbeError(f"GET {_display(at)} redirected to {_display(to)}: {exc}") from None
        raise ProbeError(
            f"GET {_display(at)} redirected to {_display(to)}, outside source {name!r}'s base; "
            f"probe the final URL, or set {name}'s allow_absolute_urls = true in the verifier's "
            "configuration to follow redirects anywhere"
        ) from None


@functools.lru_cache(maxsize=1024)
def _parsed(url: str) -> yarl.URL:
    """Parsing a URL costs more than sending it; a verifier reads the same few URLs again and
    again."""
    return yarl.URL(url)


def _display(url: str) -> str:
    """The URL as a message shows it: no query (it may sign or authorise the request) and no
    user name or password."""
    parts = urlsplit(url)
    if "@" not in parts.netloc and not parts.query:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    return parts._replace(netloc=host, query="", fragment="").geturl()


def _unavailable(status: int) -> str | None:
    """Statuses that mean nothing was observed (worth a later re-read), not an answer."""
    if status in (401, 403, 407):
        return (
            f"the source refused the verifier's credentials ({status}); "
            "fix them in its configuration"
        )
    if status in (408, 425, 429) or status >= 500:
        return f"the source could not answer ({status})"
    return None
