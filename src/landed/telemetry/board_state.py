"""The board's running sums as data: what a saved exporter state holds of them, and back.

Every sum is kept exactly as it stands (floats as JSON writes them, which reads back to the
same float), so rows added after a resume give the figures a full read of the ledger gives.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from pydantic import BaseModel, ConfigDict

from landed.telemetry.aggregate import BUCKETS, Board, Exemplar, Histogram, Labels, Settled
from landed.telemetry.labels import LabelCap
from landed.telemetry.trips import TripState

__all__ = ["BoardState", "board_of", "state_of"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CapState(_Strict):
    names: list[str]
    folds: int


class HistogramState(_Strict):
    buckets: list[int]
    total: float
    count: int
    exemplars: list[Exemplar | None]


class BoardState(_Strict):
    owners: CapState
    loops: CapState
    kinds: CapState
    counts: dict[str, list[tuple[Labels, int]]]
    cost: list[tuple[Labels, float]]
    revenue: list[tuple[Labels, float]]
    probe_durations: dict[str, HistogramState]
    rejected: int
    rows_read: int
    claims_read: int
    recent: list[Settled]
    holds: list[Settled]
    tripped: TripState


def _cap(cap: LabelCap) -> CapState:
    return CapState(names=cap.names(), folds=cap.folds)


def state_of(board: Board) -> BoardState:
    """The board as data (call it where nothing feeds the board meanwhile)."""
    return BoardState(
        owners=_cap(board.owners),
        loops=_cap(board.loops),
        kinds=_cap(board.kinds),
        counts={name: list(c.items()) for name, c in board.counts.items()},
        cost=list(board.cost.items()),
        revenue=list(board.revenue.items()),
        probe_durations={
            kind: HistogramState(
                buckets=h.buckets, total=h.total, count=h.count, exemplars=h.exemplars
            )
            for kind, h in board.probe_durations.items()
        },
        rejected=board.rejected,
        rows_read=board.rows_read,
        claims_read=board.claims_read,
        recent=list(board.recent),
        holds=list(board.holds.values()),
        tripped=board.tripped.state(),
    )


def board_of(state: BoardState, max_label_values: int, recent: int) -> Board:
    """A new board holding ``state``; ValueError if the state cannot be one of these settings."""
    board = Board(max_label_values, recent=recent)
    caps = ((board.owners, state.owners), (board.loops, state.loops), (board.kinds, state.kinds))
    for cap, saved in caps:
        cap.restore(saved.names, saved.folds)
    board.counts = {name: Counter(dict(items)) for name, items in state.counts.items()}
    board.cost = defaultdict(float, dict(state.cost))
    board.revenue = defaultdict(float, dict(state.revenue))
    for kind, h in state.probe_durations.items():
        if len(h.buckets) != len(BUCKETS) or len(h.exemplars) != len(BUCKETS):
            raise ValueError(f"the probe duration histogram of {kind!r} has other buckets")
        board.probe_durations[kind] = Histogram(list(h.buckets), h.total, h.count, h.exemplars)
    board.rejected, board.rows_read = state.rejected, state.rows_read
    board.claims_read = state.claims_read
    if len(state.recent) > recent:
        raise ValueError(f"{len(state.recent)} recent rows saved, more than {recent}")
    board.recent.extend(state.recent)
    if len(state.holds) > board.max_holds:
        raise ValueError(f"{len(state.holds)} holds saved, more than {board.max_holds}")
    board.holds = {row.task_id: row for row in state.holds}
    board.tripped.restore(state.tripped)
    return board
