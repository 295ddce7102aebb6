"""``landed check --live`` options, apart from the reader so a check without --live never
imports the HTTP client (a sixth of the command's start-up)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["LiveOptions"]

_MAX_BODY: Final = 4 << 20


@dataclass(frozen=True, slots=True)
class LiveOptions:
    """How hard ``--live`` may push: requests in flight, seconds per request, bytes per body."""

    concurrency: int = 32
    timeout_s: float = 10.0
    max_body_bytes: int = _MAX_BODY
    #: Re-read pages on loopback, private and link-local addresses too. Off by default: the
    #: receipts come from agents, and a ref (or a redirect) pointing inward would have the
    #: checker read, and report on, pages of the network it runs in.
    allow_private: bool = False
