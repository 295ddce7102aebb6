"""The metric contract: the board's sums as Prometheus families, with fixed names and labels."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.samples import Exemplar

from landed.telemetry.aggregate import BUCKETS, Board

__all__ = ["OWNER_LOOP_COUNTERS", "ScorecardCollector"]

OL = ["owner", "loop"]
#: Counters labelled by owner and loop alone, with their help text.
OWNER_LOOP_COUNTERS = {
    "landed_tasks_started_total": "Tasks that reached their act (the ledger's claims).",
    "landed_done_claimed_total": "Settled receipts whose status or verdict claims done.",
    "landed_done_proven_total": "Done claims proven at P3 or above, words agreeing.",
    "landed_held_total": "Receipts settled as held at an approval gate.",
    "landed_blocked_total": "Receipts settled as blocked.",
    "landed_harness_releases_total": "Tasks released after a harness failure (GOV-10).",
    "landed_reversals_total": "Later receipt rows with verdict reversed.",
}


#: The rule label's values (landed.loops.tripwire.rule_kind).
_RULES = ("not_done_in_a_row", "proof_floor", "silence")


def _counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
    # prometheus_client appends _total itself; the family is named without it.
    return CounterMetricFamily(name.removesuffix("_total"), doc, labels=labels)


class ScorecardCollector(Collector):
    """Reads the board at scrape time; ``up`` says whether the last read of the ledger worked."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self.up = False

    def collect(self) -> Iterator[Metric]:
        board = self.board
        for name, doc in OWNER_LOOP_COUNTERS.items():
            family = _counter(name, doc, OL)
            for labels, value in sorted(board.counts.get(name, {}).items()):
                family.add_metric(list(labels), value)
            yield family
        settled = _counter(
            "landed_tasks_settled_total",
            "Settled receipts by verdict, rung and proof level.",
            ["verdict", "rung", "proof_level", *OL],
        )
        for labels, value in sorted(board.counts.get("landed_tasks_settled_total", {}).items()):
            settled.add_metric(list(labels), value)
        yield settled
        cost = _counter("landed_cost_usd_total", "Dollars spent, by phase.", ["phase", *OL])
        for labels, usd in sorted(board.cost.items()):
            cost.add_metric(list(labels), usd)
        yield cost
        revenue = _counter(
            "landed_verified_revenue_usd_total",
            "landed.revenue_usd of receipts graded P4 that meet their bar.",
            OL,
        )
        for labels, usd in sorted(board.revenue.items()):
            revenue.add_metric(list(labels), usd)
        yield revenue
        yield from self._probes()
        yield from self._ledger()

    def _probes(self) -> Iterator[Metric]:
        board = self.board
        seen = _counter(
            "landed_probe_observations_total",
            "Signed read-backs in settled receipts, by probe kind and outcome.",
            ["kind", "outcome"],
        )
        for labels, value in sorted(
            board.counts.get("landed_probe_observations_total", {}).items()
        ):
            seen.add_metric(list(labels), value)
        yield seen
        hist = HistogramMetricFamily(
            "landed_probe_duration_seconds",
            "How long each signed read-back took, by probe kind.",
            labels=["kind"],
        )
        for kind, h in sorted(board.probe_durations.items()):
            running, buckets = 0, []
            for bound, n, ex in zip(BUCKETS, h.buckets, h.exemplars, strict=True):
                running += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                # Shown in OpenMetrics only: a trace id leads from a slow bucket to its task.
                buckets.append((le, running, Exemplar(ex[0], ex[1])) if ex else (le, running))
            hist.add_metric([kind], buckets, h.total)
        yield hist

    def _ledger(self) -> Iterator[Metric]:
        # GOV-9: from the ledger's trip events (landed.telemetry.trips); every loop the board
        # knows has its series, at 0 until it trips.
        tripped = self.board.tripped
        loops = {labels[1] for labels in self.board.counts.get("landed_done_claimed_total", {})}
        loops |= tripped.loops() | {""}
        trips = _counter(
            "landed_tripwire_trips_total",
            "Loop tripwire trips recorded in the ledger, by the rule that tripped.",
            ["loop", "rule"],
        )
        # Each loop's rules exist at 0 before they trip: increase() sees the first trip.
        counted = {(loop, rule): 0 for loop in loops for rule in _RULES} | dict(tripped.trips)
        for (loop, rule), n in sorted(counted.items()):
            trips.add_metric([loop, rule], n)
        open_, held = tripped.repairs()
        repairs = GaugeMetricFamily(
            "landed_repairs_open",
            "Loops whose last trip's repair task has not yet settled verified, not yet held.",
            labels=["loop"],
        )
        held_family = GaugeMetricFamily(
            "landed_repairs_held",
            "Loops held for a person: tripped without a repair act of their own, or their "
            "repair's retries ran out; until a read-back of the trip settles verified.",
            labels=["loop"],
        )
        for loop in sorted(loops):
            repairs.add_metric([loop], open_.get(loop, 0))
            held_family.add_metric([loop], held.get(loop, 0))
        yield trips
        yield repairs
        yield held_family
        yield GaugeMetricFamily(
            "landed_ledger_up",
            "1 when the last read of the ledger worked; 0 keeps the last good values.",
            value=1 if self.up else 0,
        )
        rejected = _counter(
            "landed_ledger_rows_rejected_total",
            "Rows whose body does not match their body_sha256: reported, never counted.",
            [],
        )
        rejected.add_metric([], self.board.rejected)
        yield rejected
        folds = _counter(
            "landed_label_folds_total",
            "Values past LANDED_EXPORTER__MAX_LABEL_VALUES counted under 'other', by label.",
            ["label"],
        )
        board = self.board
        for label, cap in (("kind", board.kinds), ("loop", board.loops), ("owner", board.owners)):
            folds.add_metric([label], cap.folds)
        yield folds
