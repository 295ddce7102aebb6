"""The ledger's hash chain and the runner's signed heads: the one definition of both.

Every receipt row carries ``chain_pos`` (1, 2, 3, ... in append order, per ledger) and
``chain_link``::

    chain_link = sha256("landed.chain.v1\\n{chain_pos}\\n{sequence}\\n{body_sha256}\\n{prev}")

as lowercase hex, where ``sequence`` is the row's ``landed_receipts.sequence``, ``body_sha256``
the hash stored beside its body and ``prev`` the previous row's ``chain_link`` (64 zeros for the
first row). A deleted, inserted, edited or reordered row breaks the link of the row itself or of
the one after it. A table owner can recompute every link without any key, so the runner also
signs the head (position, sequence, link) with its own Ed25519 key every ``every`` appends and
every ``interval_s`` seconds into ``landed_chain_heads``; a rewrite below a signed head no longer
matches the signature, and only the runner's key can make a new one.
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
from typing import NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from landed.signing import KeyPair

__all__ = [
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
#: The key id of the unsigned row a schema migration leaves: up to its position, the links were
#: computed when the ledger was upgraded, not as each receipt was appended.
MIGRATION_KEY_ID = "migration"
_HEAD_PURPOSE = "landed.chain-head.v1"
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


class ChainRow(NamedTuple):
    """One stored receipt as the walk reads it: ``body_hash`` is the sha256 of the body as
    stored now, computed where the body lies (in SQL: a million bodies never cross into
    Python objects), ``body_sha256`` the hash stored beside it when it was appended. A tuple,
    so a database row in this column order is one as it comes."""

    sequence: int
    pos: int | None
    link: str | None
    body_sha256: str
    body_hash: str


@dataclass(frozen=True, slots=True)
class SignedHead:
    """One row of ``landed_chain_heads``: a chain head and the runner's signature over it."""

    pos: int
    sequence: int
    link: str
    key_id: str
    signed_at: str
    signature: str

    def signature_ok(self, public_key: Ed25519PublicKey) -> bool:
        try:
            public_key.verify(base64.b64decode(self.signature, validate=True), self.payload())
        except (InvalidSignature, ValueError):
            return False
        return True

    def payload(self) -> bytes:
        return head_payload(self.pos, self.sequence, self.link, self.key_id, self.signed_at)

    def values(self) -> tuple[int, int, str, str, str, str]:
        """In the column order of landed_chain_heads' insert."""
        return (self.pos, self.sequence, self.link, self.key_id, self.signed_at, self.signature)


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
    unsigned: int = field(default=0, init=False)
    _last: float = field(default_factory=time.monotonic, init=False)

    def appended(self, rows: int) -> None:
        self.unsigned += rows

    def due(self) -> bool:
        if self.unsigned <= 0:
            return False
        return self.unsigned >= self.every or time.monotonic() - self._last >= self.interval_s

    def committed(self) -> None:
        """The signed head is stored (called after its transaction commits, never before)."""
        self.unsigned = 0
        self._last = time.monotonic()

    def sign(self, head: ChainHead) -> SignedHead:
        at = datetime.now(UTC).isoformat(timespec="microseconds")
        key_id = self.key.key_id
        payload = head_payload(head.pos, head.sequence, head.link, key_id, at)
        signature = base64.b64encode(self.key.sign(payload)).decode()
        return SignedHead(head.pos, head.sequence, head.link, key_id, at, signature)


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
        await sign()
