"""The ledger's signed heads and the runner's head signer (the links: landed.ledger.links).

Every row carries ``chain_pos`` and ``chain_link``; links v2 (landed.ledger.links) cover every
column a read selects on, with one chain each for receipts, claims and events. ``link`` below
is the first version's definition (position, sequence, body hash), kept for the heads signed
over it and for readers of old exports. A table owner can recompute every link without any
key, so the runner also signs heads with its own Ed25519 key every ``every`` appends and every
``interval_s`` seconds into ``landed_chain_heads``: a rewrite below a signed head no longer
matches the signature, and only the runner's key can make a new one. A v2 head vouches only for
the rows the runner appended itself (landed.ledger.vouch): a row it did not write stops it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from landed.signing import KeyPair

__all__ = [
    "DEFAULT_FOREIGN_AFTER_S",
    "DEFAULT_HEAD_EVERY",
    "DEFAULT_HEAD_INTERVAL_S",
    "GENESIS",
    "MAX_HEADS",
    "MIGRATION_KEY_ID",
    "ChainHead",
    "ChainRow",
    "HeadSigner",
    "SignedHead",
    "head_payload",
    "keep_signing",
    "link",
    "stop_signing",
]

GENESIS = "0" * 64
#: Signed heads: one per this many appends by a runner ...
DEFAULT_HEAD_EVERY = 100
#: ... and, while appends are unsigned, at least this often.
DEFAULT_HEAD_INTERVAL_S = 30.0
#: A row past the last signed head that no runner vouched for this long is foreign.
DEFAULT_FOREIGN_AFTER_S = 300.0
#: The key id of the unsigned row a schema migration leaves: up to its position, the links were
#: computed when the ledger was upgraded, not as each receipt was appended.
MIGRATION_KEY_ID = "migration"
_HEAD_PURPOSE = "landed.chain-head.v1"
_HEAD_PURPOSE_V2 = "landed.chain-head.v2"
#: `landed ledger verify` reads at most this many signed heads (a bound before buffering them).
MAX_HEADS = 1_000_000
_log = logging.getLogger(__name__)


def link(pos: int, sequence: int, body_sha256: str, prev: str) -> str:
    """The chain link of one row (see the module docstring)."""
    data = f"landed.chain.v1\n{pos}\n{sequence}\n{body_sha256}\n{prev}".encode()
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class ChainHead:
    """The last row of the chain: where the next append links on."""

    pos: int = 0
    sequence: int = 0
    link: str = GENESIS

    def next(self, sequence: int, body_sha256: str) -> ChainHead:
        pos = self.pos + 1
        return ChainHead(pos, sequence, link(pos, sequence, body_sha256, self.link))


#: One stored row as the walk reads it: (order, chain_pos, chain_link, body_sha256 as stored,
#: the body's sha256 now, appended_at, then the link's fields (links.FIELDS) as stored). The
#: order is the column rows are appended in (a receipt's sequence); the body hashes are ""
#: for a chain whose link covers its body's hash itself. A tuple, so a database row in this
#: column order is one as it comes; the body hash now is computed where the body lies.
ChainRow = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class SignedHead:
    """One row of ``landed_chain_heads``: a chain head and the runner's signature over it."""

    pos: int
    sequence: int
    link: str
    key_id: str
    signed_at: str
    signature: str
    #: Version 2 heads: the tail of every other chain and the positions the signer wrote
    #: itself (landed.ledger.vouch); None for a head signed before the v2 links.
    detail: str | None = None

    def signature_ok(self, public_key: Ed25519PublicKey) -> bool:
        try:
            public_key.verify(base64.b64decode(self.signature, validate=True), self.payload())
        except (InvalidSignature, ValueError):
            return False
        return True

    def payload(self) -> bytes:
        signed = head_payload(self.pos, self.sequence, self.link, self.key_id, self.signed_at)
        if self.detail is None:
            return signed
        return signed.replace(_HEAD_PURPOSE.encode(), _HEAD_PURPOSE_V2.encode(), 1) + (
            f"\n{self.detail}".encode()
        )

    def values(self) -> tuple[int, int, str, str, str, str, str | None]:
        """In the column order of landed_chain_heads' insert."""
        return (
            self.pos,
            self.sequence,
            self.link,
            self.key_id,
            self.signed_at,
            self.signature,
            self.detail,
        )


def head_payload(pos: int, sequence: int, chain_link: str, key_id: str, signed_at: str) -> bytes:
    """The bytes a runner signs; the purpose prefix keeps them apart from every other landed
    signature (a verifier's observation can never pass for a head, nor the reverse)."""
    return f"{_HEAD_PURPOSE}\n{pos}\n{sequence}\n{chain_link}\n{key_id}\n{signed_at}".encode()


@dataclass
class HeadSigner:
    """The runner's head-signing key and when to use it: every ``every`` appends, and at least
    every ``interval_s`` seconds while appends are unsigned (and when the ledger closes)."""

    key: KeyPair
    every: int = DEFAULT_HEAD_EVERY
    interval_s: float = DEFAULT_HEAD_INTERVAL_S
    #: A row this signer did not write, vouched by no head of its key (or of ``peers``) for
    #: this long, is foreign: signing stops (landed.ledger.vouch).
    foreign_after: float = DEFAULT_FOREIGN_AFTER_S
    #: Other runners' head keys sharing this ledger, by key id: their heads vouch their rows.
    peers: dict[str, Ed25519PublicKey] = field(default_factory=dict)
    #: Told each head once its transaction committed (the witness's sender); never raises.
    on_signed: Callable[[SignedHead], None] | None = None
    unsigned: int = field(default=0, init=False)
    _last: float = field(default_factory=time.monotonic, init=False)
    #: The links this signer appended since its last head, by chain and position.
    own: dict[str, dict[int, str]] = field(default_factory=dict, init=False)
    #: Per chain, the position up to which every row is accounted for (None: not read yet).
    base: dict[str, int] | None = field(default=None, init=False)
    #: Rows found that this signer did not write: when first seen, and those judged foreign.
    seen: dict[tuple[str, int], float] = field(default_factory=dict, init=False)
    foreign: set[tuple[str, int]] = field(default_factory=set, init=False)
    staged: dict[str, int] = field(default_factory=dict, init=False)
    #: What the v2 upgrade's marker says it re-chained, as this signer found it at start: its
    #: heads repeat it, and only a marker a signed head repeats vouches for those rows.
    migrated: dict[str, int] = field(default_factory=dict, init=False)
    _signed: SignedHead | None = field(default=None, init=False)

    def appended(self, rows: int) -> None:
        self.unsigned += rows

    def wrote(self, chain: str, pos: int, chain_link: str) -> None:
        """One row this signer's ledger appended (O(1): the append path pays nothing more)."""
        self.own.setdefault(chain, {})[pos] = chain_link
        self.unsigned += 1

    def due(self) -> bool:
        if self.unsigned <= 0:
            return False
        if self.foreign and time.monotonic() - self._last < self.interval_s:
            return False  # blocked by a foreign row: tried again once per interval, not per append
        return self.unsigned >= self.every or time.monotonic() - self._last >= self.interval_s

    def committed(self) -> None:
        """The signed head is stored (called after its transaction commits, never before)."""
        self.unsigned = 0
        self._last = time.monotonic()
        if self.staged:
            self.base = dict(self.staged)
            for chain, upto in self.staged.items():
                mine = self.own.get(chain, {})
                for pos in [p for p in mine if p <= upto]:
                    del mine[pos]
                for seen in [k for k in self.seen if k[0] == chain and k[1] <= upto]:
                    del self.seen[seen]
            self.staged = {}
        signed, self._signed = self._signed, None
        if signed is not None and self.on_signed is not None:
            self.on_signed(signed)

    def refused(self) -> None:
        """A head was not signed (a foreign row): try again after the interval."""
        self._last = time.monotonic()

    def sign(self, head: ChainHead, detail: str | None = None) -> SignedHead:
        at = datetime.now(UTC).isoformat(timespec="microseconds")
        key_id = self.key.key_id
        unsigned = SignedHead(head.pos, head.sequence, head.link, key_id, at, "", detail)
        signature = base64.b64encode(self.key.sign(unsigned.payload())).decode()
        self._signed = SignedHead(head.pos, head.sequence, head.link, key_id, at, signature, detail)
        return self._signed


async def keep_signing(signer: HeadSigner, sign: Callable[[], Awaitable[None]]) -> None:
    """Sign the head every ``interval_s`` while appends are unsigned: a quiet runner's last
    receipts are covered without waiting for the next hundred. A failed signature is retried
    at the next tick; the appends themselves never wait for it."""
    while True:
        await asyncio.sleep(signer.interval_s)
        if signer.unsigned > 0:
            try:
                await sign()
            except Exception as exc:  # the ticker outlives any one failure; never the appends
                _log.warning(
                    "signing the ledger's chain head failed (retried in %ss): %s",
                    signer.interval_s,
                    exc,
                )


async def stop_signing(
    signer: HeadSigner | None,
    ticker: asyncio.Task[None] | None,
    sign: Callable[[], Awaitable[None]],
) -> None:
    """At close: stop the ticker, then sign what this process appended since the last head."""
    if ticker is not None:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
    if signer is not None and signer.unsigned > 0:
        try:
            await sign()
        except Exception as exc:  # closing goes on: the ledger may be unreadable
            # The rows stay unsigned: `ledger verify` counts them in the unsigned tail.
            _log.error(
                "the last head could not be signed at close (%s): %s", type(exc).__name__, exc
            )
