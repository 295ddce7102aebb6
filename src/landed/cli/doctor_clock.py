"""``landed doctor``'s clock check: this machine's clock against the Temporal server's (the
start time Temporal stamps on the doctor's preflight workflow) and the ledger's (PostgreSQL's
clock; a SQLite ledger is a file here, on this machine's clock). Time caps, settle windows,
approvals' expiry and receipts' times are compared across these clocks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from landed.cli.doctor_check import Check, bounded, first_line

__all__ = ["SKEW_LIMIT_S", "Offset", "clock_check", "ledger_offset", "offset_between"]

#: More than this apart (beyond what the round trip leaves unknown) is a problem.
SKEW_LIMIT_S = 5.0
_NAME = "clock"
_NTP = (
    "synchronise the clocks with NTP (timedatectl set-ntp true, or chrony/ntpd) on this machine "
    "and on the server named"
)


@dataclass(frozen=True)
class Offset:
    """How far ``what``'s clock is ahead of this machine's (negative: behind), within
    ``within_s`` either way (half the round trip of the read that saw it)."""

    what: str
    offset_s: float
    within_s: float

    @property
    def skew_s(self) -> float:
        """The least the two clocks can be apart, given what the round trip leaves unknown."""
        return max(abs(self.offset_s) - self.within_s, 0.0)


def offset_between(server_s: float, before_s: float, after_s: float, what: str) -> Offset:
    """The offset of a server time stamped between this machine's ``before_s`` and
    ``after_s`` (all Unix seconds)."""
    return Offset(what, server_s - (before_s + after_s) / 2, (after_s - before_s) / 2)


def _shown(offset: Offset) -> str:
    way = "ahead of" if offset.offset_s >= 0 else "behind"
    return f"{offset.what} {abs(offset.offset_s):.1f}s {way} this machine (±{offset.within_s:.1f}s)"


def clock_check(offsets: Sequence[Offset], unchecked: Sequence[str]) -> Check:
    """The decision: a problem when any clock is more than SKEW_LIMIT_S from this machine's;
    ``unchecked`` says which clocks were not compared, and why."""
    seen = "; ".join([*map(_shown, offsets), *unchecked]) or "no clock to compare"
    off = [o for o in offsets if o.skew_s > SKEW_LIMIT_S]
    if off:
        names = ", ".join(o.what for o in off)
        return Check.problem(
            _NAME, f"{names} more than {SKEW_LIMIT_S:g}s off: {seen}", f"{_NTP} ({names})"
        )
    if not offsets:
        return Check.problem(_NAME, f"not compared: {seen}", "fix the problems above first")
    return Check.passed(_NAME, seen)


async def ledger_offset(url: str, timeout: float) -> Offset | str | None:
    """The PostgreSQL ledger's offset; None for SQLite; a string saying why it was not read."""
    from landed.ledger.factory import clock_offset

    try:
        found = await bounded(clock_offset(url), timeout, "the ledger")
    except Exception as exc:
        first = first_line(exc)
        return f"ledger not compared ({first})"
    return None if found is None else Offset("the ledger (PostgreSQL)", *found)
