"""Events beside the receipts: what a watcher decided (a tripwire's trip, its rule, the receipts
that tripped it, the repair it queued), append-only like the receipts and keyed so that a
retried or replayed write stores it once.

Events are links of a chain of their own (``events``, landed.ledger.links) whose tail every
signed head carries: an edited, deleted or inserted event is reported by `landed ledger
verify` like a receipt, beside the same refusals (UPDATE, DELETE and a rewrite of a stored
key fail). Each backend stores them its own way (landed.ledger.sqlite.events,
landed.ledger.postgres.events) through the rules here."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from landed.ledger.base import LedgerError, LedgerEvent

__all__ = [
    "MAX_EVENTS",
    "EventConflict",
    "LedgerEvent",
    "Wrote",
    "body_sha",
    "check_same",
    "event_of",
    "read_limit",
]

#: The most events one read returns (newest first): a read is bounded before it is buffered.
MAX_EVENTS = 1000


class EventConflict(LedgerError):
    """A stored event's key was appended again with a different body."""


def check_same(event: LedgerEvent, stored: str | None) -> bool:
    """True if new; False if the same event was stored; a different one under its key fails."""
    if stored is None:
        return True
    if stored != event.stored_body():
        raise EventConflict(
            f"the ledger already holds event {event.key!r} with a different body; events are "
            "append-only: record a new event under a new key instead of changing a stored one"
        )
    return False


def read_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_EVENTS:
        raise LedgerError(f"an events read takes a limit from 1 to {MAX_EVENTS}, not {limit}")
    return limit


#: Told of each event row this ledger appended (the head signer's own links).
Wrote = Callable[[str, int, str], None]


def body_sha(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def event_of(
    sequence: int, key: str, kind: str, loop: str | None, at: Any, body: str
) -> LedgerEvent:
    return LedgerEvent(
        sequence=int(sequence),
        key=key,
        kind=kind,
        loop=loop,
        at=at if isinstance(at, datetime) else datetime.fromisoformat(str(at)),
        body=json.loads(body),
    )
