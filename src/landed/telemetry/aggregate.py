"""The scorecard as running sums over the ledger, fed one stored row at a time, in order.

Nothing here reads the ledger: ``reader`` hands rows in; this module turns each verified row
into counts. Every figure is a sum over rows, so reading the rows again after a restart gives
the same figures.
"""

from __future__ import annotations

import logging
import math
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from landed.ledger.base import LedgerError, parse_body
from landed.receipts.grading import evaluate
from landed.receipts.ladder import ProofLevel, Status
from landed.receipts.model import Receipt, run_id_of
from landed.receipts.scorecard import fleet_figures
from landed.telemetry.labels import LabelCap, bounded
from landed.telemetry.task_metrics import exemplar_labels
from landed.telemetry.trips import TripBoard

__all__ = ["BUCKETS", "Board", "Exemplar", "Histogram", "Labels", "Settled"]

log = logging.getLogger("landed.telemetry")

#: Upper bounds (seconds) of the probe duration histogram.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, math.inf)
Labels = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Settled:
    """One settled row as the page shows it."""

    sequence: int
    task_id: str
    verdict: str
    owner: str
    loop: str
    settled_at: datetime | None
    run_id: str


#: A bucket's exemplar: the trace id of its latest traced observation, and its value (served
#: without a timestamp: Prometheus stamps it at the scrape, so a re-read ledger is in order).
Exemplar = tuple[dict[str, str], float]


@dataclass
class Histogram:
    buckets: list[int] = field(default_factory=lambda: [0] * len(BUCKETS))
    total: float = 0.0
    count: int = 0
    exemplars: list[Exemplar | None] = field(default_factory=lambda: [None] * len(BUCKETS))

    def observe(self, seconds: float, exemplar: dict[str, str] | None = None) -> None:
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                self.buckets[i] += 1
                if exemplar:  # the last traced observation leads from the bucket to its trace
                    self.exemplars[i] = (exemplar, seconds)
                break
        self.total += seconds
        self.count += 1


class Board:
    """Counters keyed by label tuples, the last settled rows and the open holds."""

    def __init__(self, max_label_values: int, recent: int = 20, max_holds: int = 500) -> None:
        self.owners = LabelCap(max_label_values)
        self.loops = LabelCap(max_label_values)
        self.kinds = LabelCap(max_label_values)
        self.counts: dict[str, Counter[Labels]] = {}
        self.cost: defaultdict[Labels, float] = defaultdict(float)
        self.revenue: defaultdict[Labels, float] = defaultdict(float)
        self.probe_durations: dict[str, Histogram] = {}
        self.rejected = 0
        self.rows_read = 0
        self.claims_read = 0
        self.recent: deque[Settled] = deque(maxlen=recent)
        self.holds: dict[str, Settled] = {}
        self.max_holds = max_holds
        # GOV-9: trips (the ledger's trip events) and the repairs they opened.
        self.tripped = TripBoard(self.loops)

    @property
    def version(self) -> int:
        """Changes whenever a row or a claim was read (what the rendered text depends on)."""
        return self.rows_read + self.claims_read + self.tripped.read

    def count(self, name: str, labels: Labels, by: int = 1) -> None:
        self.counts.setdefault(name, Counter())[labels] += by

    def add_row(self, sequence: int, body: str, sha256: str) -> None:
        """One stored row: counted when its body matches its hash, else rejected and logged."""
        self.rows_read += 1
        try:
            receipt = parse_body(body, sequence, sha256)
        except LedgerError as exc:
            self.rejected += 1
            log.warning("landed exporter: %s", exc)
            return
        self._add_receipt(sequence, receipt)

    def add_claim(self, owner: str | None, loop: str | None, body: str | None) -> None:
        """A claim (a task that reached its act), labelled by its own owner and loop, else by
        its receipt's (a claim stored before claims named them)."""
        self.claims_read += 1
        self.count("landed_tasks_started_total", self._owner_loop(owner, loop or _loop_in(body)))

    def _owner_loop(self, owner: str | None, loop: str | None) -> Labels:
        return (self.owners.fold(owner), self.loops.fold(loop))

    def _add_receipt(self, sequence: int, receipt: Receipt) -> None:
        ext = receipt.landed
        ol = self._owner_loop(receipt.owner, ext.loop if ext is not None else None)
        verdict = receipt.verdict or ""
        row = Settled(
            sequence,
            receipt.task_id,
            verdict,
            ol[0],
            ol[1],
            receipt.settled_at,
            run_id_of(receipt),
        )
        self.recent.append(row)
        self.tripped.add_receipt(receipt)
        if verdict == "reversed":  # a later recheck took back an earlier verdict
            self.count("landed_reversals_total", ol)
            self.holds.pop(receipt.task_id, None)
            return
        if ext is not None and getattr(ext, "lifecycle", None) == "confirmed":
            # A recheck found the settled outcome still there: the same task, not a new one.
            return
        graded = evaluate(receipt)
        rung = ext.rung if ext is not None else None
        self.count(
            "landed_tasks_settled_total",
            (
                bounded(verdict, "verdict"),
                bounded(rung, "rung"),
                bounded(graded.proof_level.label, "proof_level"),
                *ol,
            ),
        )
        self.count("landed_done_claimed_total", ol, int(graded.claims_done))
        self.count("landed_done_proven_total", ol, int(graded.done_at_p3))
        held = graded.proven_status is Status.HELD
        self.count("landed_held_total", ol, int(held))
        self.count("landed_blocked_total", ol, int(graded.proven_status is Status.BLOCKED))
        # Harness releases (GOV-10) as the receipt records them: counted apart from failures.
        self.count("landed_harness_releases_total", ol, fleet_figures(ext)[1])
        self._money(receipt, ol, graded.proof_level is ProofLevel.P4 and graded.meets_bar)
        self._probes(receipt)
        self._hold(receipt.task_id, row, held or verdict == Status.HELD.value)

    def _money(self, receipt: Receipt, ol: Labels, reconciled: bool) -> None:
        usd = receipt.cost.usd if receipt.cost is not None else None
        self.cost[("act", *ol)] += usd if usd is not None and _spent(usd) else 0.0
        # The verifier's own cost (GOV-8), as the runner measured it into landed.cost.verify.
        verify = fleet_figures(receipt.landed)[0]
        self.cost[("verify", *ol)] += verify if verify is not None else 0.0
        revenue = receipt.landed.revenue_usd if receipt.landed is not None else None
        self.revenue[ol] += (
            revenue if revenue is not None and reconciled and _spent(revenue) else 0.0
        )

    def _probes(self, receipt: Receipt) -> None:
        for proof in receipt.proof:
            extra: dict[str, Any] = proof.landed or {}
            obs = extra.get("observation")
            # Signed read-backs only: a pre-read ("before") is no observation of the outcome.
            if not isinstance(obs, dict) or "signature" not in extra:
                continue
            if extra.get("phase", "after") != "after":
                continue
            kind = self.kinds.fold(str(obs.get("kind") or ""))
            self.count("landed_probe_observations_total", (kind, str(obs.get("outcome", ""))))
            ms = obs.get("duration_ms")
            if isinstance(ms, int | float) and math.isfinite(ms) and ms >= 0:
                hist = self.probe_durations.setdefault(kind, Histogram())
                trace = _trace_of(extra)
                hist.observe(ms / 1000, exemplar_labels(trace, receipt.task_id) if trace else None)

    def _hold(self, task_id: str, row: Settled, held: bool) -> None:
        self.holds.pop(task_id, None)  # the task's latest row decides; re-added at the end
        if held:
            self.holds[task_id] = row
            if len(self.holds) > self.max_holds:
                del self.holds[next(iter(self.holds))]


def _trace_of(extra: dict[str, Any]) -> str | None:
    """The verifier's trace id of a reading (landed.trace_id: 32 hex digits), if it has one."""
    trace = extra.get("trace_id")
    if isinstance(trace, str) and len(trace) == 32 and all(c in _HEX for c in trace):
        return trace
    return None


_HEX = frozenset("0123456789abcdef")


def _spent(usd: float | None) -> bool:
    return usd is not None and math.isfinite(usd) and usd >= 0


def _loop_in(body: str | None) -> str | None:
    if not body:
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    ext = data.get("landed") if isinstance(data, dict) else None
    loop = ext.get("loop") if isinstance(ext, dict) else None
    return loop if isinstance(loop, str) else None
