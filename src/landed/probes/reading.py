"""What a probe runner hands back: bounded raw bytes with their digest, and a typed value."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from landed.probes.contract import Evidence
from landed.util.redact import Redactor, escape_for_humans

__all__ = [
    "DEFAULT_READ_CAP",
    "DEFAULT_READ_LIMIT",
    "NO_VALUE",
    "Capture",
    "Limits",
    "ProbeError",
    "RawJson",
    "Reading",
    "cut",
    "exact_float",
    "make_evidence",
    "strict_json",
]

#: Bytes of output kept in memory for expectations to match against.
DEFAULT_READ_CAP = 8 * 1024 * 1024
#: Bytes read (and hashed) at most; a probe whose output goes past this observed nothing whole.
DEFAULT_READ_LIMIT = 1024 * 1024 * 1024


def cut(text: str, limit: int) -> str:
    """``text`` cut after ``limit`` characters, marked "..." where it was cut (the mark the
    redactor matches a secret's remaining end on)."""
    return text if len(text) <= limit else text[:limit] + "..."


class _NoValue:
    def __repr__(self) -> str:
        return "NO_VALUE"


#: The runner has no typed value; expectations work on the output text.
NO_VALUE: Any = _NoValue()


class ProbeError(Exception):
    """Nothing was observed: connection refused, timeout, bad configuration, a crashed reader.

    ``capture`` holds whatever output there was (a failed command's stdout), shown as evidence.
    """

    def __init__(self, message: str, capture: Capture | None = None) -> None:
        super().__init__(message)
        self.capture = capture


class Capture:
    """Counts and hashes every byte fed to it, and keeps the first ``keep`` bytes."""

    def __init__(self, keep: int = DEFAULT_READ_CAP, limit: int = DEFAULT_READ_LIMIT) -> None:
        self._keep = keep
        self._limit = limit
        self._parts: list[bytes] = []
        self._kept = 0
        self._hash = hashlib.sha256()
        self.total = 0

    def feed(self, chunk: bytes) -> bool:
        """Take a chunk; False once the read limit is passed (stop reading)."""
        if not chunk:
            return self.total <= self._limit
        self.total += len(chunk)
        self._hash.update(chunk)
        room = self._keep - self._kept
        if room > 0:
            part = chunk[:room]
            self._parts.append(part)
            self._kept += len(part)
        return self.total <= self._limit

    @property
    def over_limit(self) -> bool:
        return self.total > self._limit

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def data(self) -> bytes:
        if len(self._parts) > 1:
            self._parts = [b"".join(self._parts)]
        return self._parts[0] if self._parts else b""

    @property
    def complete(self) -> bool:
        """True when ``data`` holds every byte that was read."""
        return self.total <= self._keep

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()

    @classmethod
    def of(cls, data: bytes, keep: int = DEFAULT_READ_CAP) -> Capture:
        capture = cls(keep=keep)
        capture.feed(data)
        return capture


@dataclass(frozen=True)
class Limits:
    """How long a probe may take and how much of its output is kept and read."""

    timeout_s: float
    read_cap: int = DEFAULT_READ_CAP
    read_limit: int = DEFAULT_READ_LIMIT


@dataclass
class Reading:
    """One probe's raw output plus, where the kind has one, the typed values it compares.

    ``number`` is what count/at_least compare, ``value`` what equals and rung_at_least
    compare, ``document`` what json_path walks; each left at NO_VALUE means "use the text".

    ``missing`` says the thing looked up is not there (404, no such file, unknown ref): the
    read worked and found nothing. ``failed_claims`` lists typed fields of the probe that
    disagree with what was read (a payment's amount, a file's sha256).
    """

    capture: Capture
    number: Any = NO_VALUE
    value: Any = NO_VALUE
    document: Any = NO_VALUE
    missing: bool = False
    #: ``number`` is a record's one numeric cell, taken as the number by measure=auto: a
    #: count or a value, the reading cannot tell which.
    auto_cell: bool = False
    failed_claims: list[str] = field(default_factory=list)
    checked_claims: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def text(self) -> str:
        return self.capture.data.decode("utf-8", errors="replace")

    @classmethod
    def of_json(cls, document: Any, **kwargs: Any) -> Reading:
        """A reading whose raw output is ``document`` as canonical JSON."""
        raw = json.dumps(document, sort_keys=True, ensure_ascii=False, default=str).encode()
        # Kept whole: the document is in memory already (its reader bounded it), and a cut copy
        # would leave judges that need the whole output (a regex) unable to judge it.
        return cls(capture=Capture.of(raw, keep=len(raw)), document=document, **kwargs)


def make_evidence(capture: Capture, cap: int, redactor: Redactor) -> Evidence:
    """Evidence for people and signatures: the first ``cap`` bytes, redacted, controls escaped,
    with the sha256 and length of everything that was read."""
    data = capture.data
    # Redact past the cut so a secret straddling it is replaced whole, never halved. A secret
    # cut off by the window's own end is not matched, so the window grows until its redacted
    # text still reaches a whole secret's length past the cut (replacements shorten it).
    size = cap + redactor.longest
    while True:
        window = data[:size]
        text = redactor(window.decode("utf-8", errors="replace"))
        encoded = text.encode("utf-8")
        if len(window) == len(data) or len(encoded) >= cap + redactor.longest:
            break
        size *= 2
    shown = encoded[:cap].decode("utf-8", errors="ignore")
    return Evidence(
        text=escape_for_humans(shown),
        truncated=capture.total > cap or len(encoded) > cap,
        total_bytes=capture.total,
        sha256=capture.sha256,
    )


def exact_float(value: Decimal | str) -> float | None:
    """``value`` as a float if the float is that very number (100.10 is 100.1), else None.

    A float holds about 16 significant digits: 99.99999999999999999 becomes 100.0, and an
    expectation of 100 would pass on a value below it. Such a value is never judged as a float.
    """
    try:
        exact = Decimal(value)
    except InvalidOperation:
        return None
    if not exact.is_finite():
        return None
    number = float(exact)
    if math.isinf(number):
        return None
    # Shortest form (100.10 is 100.1) or the 17-digit form some encoders print for the same
    # double (0.10000000000000001 is 0.1); any other text names a number the float is not.
    if Decimal(repr(number)) != exact and Decimal(f"{number:.17g}") != exact:
        return None
    return number


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            # Parsers disagree on which copy wins; the source meant one of them, unknown which.
            shown = key if len(key) <= 80 else key[:80] + "..."
            raise ValueError(f"the key {shown!r} appears twice in one object")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    number = exact_float(text)
    if number is None:
        raise ValueError(
            f"the number {text[:40]} cannot be compared exactly (more digits than a float holds, "
            "or out of range); have the source send it as a string or round it"
        )
    return number


def strict_json(data: bytes | str) -> Any:
    """JSON as a proof can rest on it: ValueError for duplicate keys, NaN or Infinity, and a
    number a float would round; RecursionError for nesting too deep to parse."""
    return json.loads(data, object_pairs_hook=_object, parse_constant=_constant, parse_float=_float)


class RawJson(str):
    """A JSON document as a database sent it, unparsed: parsed with strict_json where it is
    judged, not with a lenient parser that keeps the last of two keys or rounds a number."""

    @classmethod
    def load(cls, data: bytes | str) -> RawJson:
        return cls(bytes(data).decode() if not isinstance(data, str) else data)
