"""The runner signs only what it wrote: which head to sign, given the rows since its last one.

A v2 head carries, in its signed ``detail``, the tail (position, link) of the claims and events
chains and the positions of every chain that the signer appended itself (``vouched``). Before
signing, the signer reads the rows past the positions it has accounted for: each must hold a
link it appended, or be vouched by a head of its own key (another process of the same runner)
or of a configured peer. A row that is neither, for ``foreign_after`` seconds, is foreign: the
signer signs nothing more and says so loudly, and `landed ledger verify` names the row. The
file's owner can insert a row with a correct link; nobody without the key can vouch for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from landed.ledger.chain import ChainHead, HeadSigner, SignedHead
from landed.ledger.links import CHAINS, MIGRATION_V2_KEY_ID, Ranges, ranges_of

__all__ = ["Between", "HeadDetail", "in_ranges", "plan_head", "signer_base"]

_log = logging.getLogger("landed.ledger")
#: Rows read past the accounted position at one signing (a bound before buffering).
MAX_BETWEEN = 100_000
#: Recent heads read for other processes' vouching.
RECENT_HEADS = 1000


@dataclass(frozen=True)
class HeadDetail:
    chains: dict[str, tuple[int, str]] = field(default_factory=dict)
    vouched: dict[str, Ranges] = field(default_factory=dict)
    migrated: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, head: SignedHead) -> HeadDetail:
        if not head.detail:
            return cls()
        try:
            data: Any = orjson.loads(head.detail)
            return cls(
                {str(c): (int(v[0]), str(v[1])) for c, v in data.get("chains", {}).items()},
                {
                    str(c): [[int(a), int(b)] for a, b in v]
                    for c, v in data.get("vouched", {}).items()
                },
                {str(c): int(v) for c, v in data.get("migrated", {}).items()},
            )
        except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError):
            return cls()

    def encode(self) -> str:
        data = {
            "chains": {c: list(v) for c, v in self.chains.items()},
            "vouched": self.vouched,
            **({"migrated": self.migrated} if self.migrated else {}),
        }
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()


def in_ranges(ranges: Ranges, pos: int) -> bool:
    return any(a <= pos <= b for a, b in ranges)


@dataclass
class Between:
    """What a backend read under every chain's lock, for one signing."""

    tails: dict[str, ChainHead]
    rows: dict[str, list[tuple[int, str]]]
    heads: list[SignedHead] = field(default_factory=list)


def signer_base(
    signer: HeadSigner, heads: Iterable[SignedHead], tails: Mapping[str, ChainHead]
) -> dict[str, int]:
    """Where a starting signer's accounting begins: its key's last verified head (or the v2
    upgrade's marker); rows after it must each be vouched (a crash's unsigned rows too). A key
    that never signed here (a new runner key on an older ledger) starts at its own first row:
    the rows before it are the other keys' to vouch for, and `landed ledger verify` judges them."""
    base = dict.fromkeys(CHAINS, 0)
    found = False
    for head in heads:
        own = head.key_id == signer.key.key_id and head.signature_ok(signer.key.public_key)
        if not own and head.key_id != MIGRATION_V2_KEY_ID:
            continue
        detail = HeadDetail.of(head)
        if head.key_id == MIGRATION_V2_KEY_ID:
            signer.migrated = detail.migrated
        found = found or own
        base["receipts"] = max(base["receipts"], head.pos)
        for chain, (pos, _) in detail.chains.items():
            base[chain] = max(base.get(chain, 0), pos)
    if found or not any(t.pos for t in tails.values()):
        return base
    for chain in CHAINS:
        mine = signer.own.get(chain)
        start = min(mine) - 1 if mine else tails[chain].pos
        base[chain] = max(base[chain], start)
    return base


def _peer_ranges(signer: HeadSigner, heads: Sequence[SignedHead]) -> dict[str, Ranges]:
    keys: Mapping[str, Ed25519PublicKey] = {
        signer.key.key_id: signer.key.public_key,
        **signer.peers,
    }
    found: dict[str, list[int]] = {c: [] for c in CHAINS}
    for head in heads:
        key = keys.get(head.key_id)
        if key is None or not head.detail or not head.signature_ok(key):
            continue
        for chain, ranges in HeadDetail.of(head).vouched.items():
            for a, b in ranges:
                found.setdefault(chain, []).extend(range(a, b + 1))
    return {c: ranges_of(v) for c, v in found.items()}


def plan_head(signer: HeadSigner, between: Between) -> SignedHead | None:
    """The head to store, or None when a foreign row stops signing (logged, never skipped)."""
    now = time.monotonic()
    peers = _peer_ranges(signer, between.heads) if between.heads else {}
    vouch: dict[str, list[int]] = {c: [] for c in CHAINS}
    staged: dict[str, int] = {}
    bad: list[tuple[str, int]] = []
    for chain in CHAINS:
        mine = signer.own.get(chain, {})
        staged[chain] = between.tails[chain].pos
        for pos, row_link in between.rows.get(chain, []):
            if mine.get(pos) == row_link:
                vouch[chain].append(pos)
            elif not in_ranges(peers.get(chain, []), pos):
                staged[chain] = min(staged[chain], pos - 1)
                if now - signer.seen.setdefault((chain, pos), now) >= signer.foreign_after:
                    bad.append((chain, pos))
    if bad:
        for chain, pos in bad:
            if (chain, pos) not in signer.foreign:
                _log.error(
                    "landed ledger: %s row at chain position %s was not appended by this runner "
                    "and no runner's signed head vouches for it: it is FOREIGN (written into the "
                    "ledger by other means); this runner signs no more heads until it is "
                    "resolved: run `landed ledger verify` and see docs/runbooks.md",
                    chain,
                    pos,
                )
        signer.foreign.update(bad)
        return None
    signer.foreign.clear()
    signer.staged = staged
    tails = between.tails
    detail = HeadDetail(
        chains={c: (tails[c].pos, tails[c].link) for c in CHAINS if c != "receipts"},
        vouched={c: ranges_of(v) for c, v in vouch.items() if v},
        migrated=signer.migrated,
    )
    return signer.sign(tails["receipts"], detail.encode())
