"""The scale-out bench's figures: one ``Step`` per process count, the check that every task
settled verified exactly once, and the table and conclusions it prints."""

from __future__ import annotations

import os
import sqlite3
import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from bench._scale_fleet import ROLES

# A per-task figure needs a task; a failed step still reports what it saw.
_SHOWN_FAILURES = 10


@dataclass
class Step:
    """One step: the processes per role, how many tasks settled verified, the rate, and the
    CPU seconds spent in its window by each role (its processes summed), the bench's client and
    the Temporal server (absent when it is not a process of this machine)."""

    name: str
    processes: dict[str, int]
    tasks: int
    settled_verified: int
    seconds: float
    rate: float
    cpu_s: dict[str, float]
    cpu_ms_per_task: dict[str, float]
    server_share: float | None
    machine_busy: float
    others_share: float
    started_at: str
    ended_at: str
    not_verified: dict[str, str] = field(default_factory=dict)
    ratio_to_n1: float | None = None
    pids: dict[str, list[int]] = field(default_factory=dict)
    round: int = 0
    # The rate this step's CPU per task allows if the bench had every core of the machine: it
    # does not move with other load the way the measured rate does.
    ceiling: float = 0.0

    @classmethod
    def of(
        cls,
        name: str,
        counts: Mapping[str, int],
        outcome: Mapping[str, str],
        settled: Mapping[str, str],
        seconds: float,
        cpu: Mapping[str, float],
        machine: tuple[float, float],
        started: float,
        pids: Mapping[str, list[int]] | None = None,
    ) -> Step:
        bad = {
            task: outcome.get(task, "never answered")
            if outcome.get(task) != "verified"
            else settled[task]
            for task in settled
            if outcome.get(task) != "verified" or settled[task] != "verified"
        }
        n = len(settled)
        ours = sum(cpu.values())
        busy, total = machine
        return cls(
            name=name,
            processes=dict(counts),
            tasks=n,
            settled_verified=n - len(bad),
            seconds=round(seconds, 3),
            rate=round(n / seconds, 2),
            cpu_s={k: round(v, 2) for k, v in cpu.items()},
            cpu_ms_per_task={k: round(v * 1000 / n, 2) for k, v in cpu.items()},
            server_share=round(cpu["server"] / ours, 3) if "server" in cpu and ours else None,
            machine_busy=round(busy / total, 3) if total else 0.0,
            # Busy time of the machine that none of the bench's processes spent: other load.
            others_share=round(max(busy - ours, 0.0) / busy, 3) if busy else 0.0,
            started_at=_utc(started),
            ended_at=_utc(started + seconds),
            not_verified=dict(list(bad.items())[:_SHOWN_FAILURES]),
            pids={k: list(v) for k, v in (pids or {}).items() if k != "client"},
            ceiling=round((os.cpu_count() or 1) * n / ours, 1) if ours else 0.0,
        )


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


async def verdicts(ledger_url: str, marks_db: Path, ids: list[str]) -> dict[str, str]:
    """Per task: ``verified`` when the ledger holds exactly one receipt for it, verified, and
    the act wrote its row exactly once; otherwise what was found instead."""
    from landed.ledger.factory import open_ledger

    with sqlite3.connect(marks_db) as conn:
        marks = dict(conn.execute("select task, count(*) from marks group by task").fetchall())
    found: dict[str, str] = {}
    async with await open_ledger(ledger_url, create=False) as ledger:
        for task_id in ids:
            stored = await ledger.get(task_id)
            if len(stored) != 1:
                found[task_id] = f"{len(stored)} receipts in the ledger"
            elif stored[0].verdict != "verified":
                found[task_id] = f"settled {stored[0].verdict}"
            elif marks.get(task_id, 0) != 1:
                found[task_id] = f"the act wrote {marks.get(task_id, 0)} rows"
            else:
                found[task_id] = "verified"
    return found


_HEAD = (
    f"  {'':12} {'processes':^17} {'':8} {'':7} {'':9} {'cpu ms per task':^34} "
    f"{'server':>6} {'machine':>7} {'other':>6} {'ceiling':>7}\n"
    f"  {'step':12} {'actor':>5} {'verif':>5} {'runnr':>5} {'tasks/s':>8} {'vs N=1':>7} "
    f"{'verified':>9} {'actor':>6} {'verif':>6} {'runnr':>6} {'client':>6} {'server':>6} "
    f"{'share':>6} {'busy':>7} {'load':>6} {'tasks/s':>7}"
)


def render(steps: list[Step], *, header: bool = False) -> str:
    """Table rows. ``server share``: the server's part of the bench's CPU; ``machine busy``:
    how busy all cores were; ``other load``: the part of that busy time no process of the bench
    spent (a shared machine's other work); ``ceiling``: cores / CPU per task of the bench."""
    lines = [_HEAD] if header else []
    for s in steps:
        ms = s.cpu_ms_per_task
        server = f"{ms['server']:6.1f}" if "server" in ms else f"{'-':>6}"
        share = f"{s.server_share:6.0%}" if s.server_share is not None else f"{'-':>6}"
        lines.append(
            f"  {s.name:12} {s.processes['actor']:5d} {s.processes['verifier']:5d} "
            f"{s.processes['runner']:5d} {s.rate:8.1f} {s.ratio_to_n1 or 0:6.2f}x "
            f"{s.settled_verified:4d}/{s.tasks:<4d} {ms['actor']:6.1f} {ms['verifier']:6.1f} "
            f"{ms['runner']:6.1f} {ms['client']:6.1f} {server} {share} "
            f"{s.machine_busy:7.0%} {s.others_share:6.0%} {s.ceiling:7.1f}"
        )
    return "\n".join(lines)


def _median(group: list[Step]) -> Step:
    """One row for a step run in several rounds: the median of each figure, the tasks summed."""
    first = group[0]

    def mid(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return round(statistics.median(known), 3) if known else None

    return replace(
        first,
        tasks=sum(s.tasks for s in group),
        settled_verified=sum(s.settled_verified for s in group),
        rate=mid([s.rate for s in group]) or 0.0,
        ratio_to_n1=mid([s.ratio_to_n1 for s in group]),
        cpu_ms_per_task={
            k: mid([s.cpu_ms_per_task[k] for s in group]) or 0.0 for k in first.cpu_ms_per_task
        },
        server_share=mid([s.server_share for s in group]),
        machine_busy=mid([s.machine_busy for s in group]) or 0.0,
        others_share=mid([s.others_share for s in group]) or 0.0,
        ceiling=mid([s.ceiling for s in group]) or 0.0,
        not_verified={k: v for s in group for k, v in s.not_verified.items()},
    )


def summary(steps: list[Step]) -> dict[str, object]:
    """Per step the median over the rounds (ratios paired with the N=1 step of their own
    round), whether every task settled verified, and the lines an operator reads: the curve,
    the one-role steps side by side, where the CPU goes."""
    names = list(dict.fromkeys(s.name for s in steps))
    medians = [_median([s for s in steps if s.name == name]) for name in names]
    rounds = max(s.round for s in steps) + 1
    lines = [f"  median of {rounds} rounds:", render(medians, header=True)] if rounds > 1 else []
    base = medians[0]
    curve = [s for s in medians if s.name.startswith("all ")]
    each = [s for s in medians if not s.name.startswith("all ")]
    lines.append(
        "  throughput curve (every role at N, ratio to N=1 of the same round): "
        + ", ".join(f"N={s.processes['actor']} {s.rate:.1f}/s {s.ratio_to_n1:.2f}x" for s in curve)
    )
    lines.append(
        f"  cpu-bound ceiling on {os.cpu_count()} cores (cores / cpu per task, other load left "
        "out): " + ", ".join(f"N={s.processes['actor']} {s.ceiling:.1f}/s" for s in curve)
    )
    if each:
        best = max(each, key=lambda s: s.ratio_to_n1 or 0.0)
        lines.append(
            "  one role scaled, the others at 1: "
            + ", ".join(f"{s.name} {s.ratio_to_n1:.2f}x" for s in each)
            + f" (highest: {best.name})"
        )
    roles = {r: base.cpu_ms_per_task[r] for r in ROLES}
    heaviest = max(roles, key=lambda r: roles[r])
    total = sum(base.cpu_ms_per_task.values())
    lines.append(
        f"  at N=1: {total:.1f} cpu ms/task in all; the heaviest role is the {heaviest} "
        f"({roles[heaviest]:.1f} ms)"
        + (
            f", the Temporal server spends {base.cpu_ms_per_task['server']:.1f} ms "
            f"({base.server_share:.0%} of the bench's CPU)"
            if base.server_share is not None
            else "; the Temporal server's CPU is not measured (not a process of this machine)"
        )
    )
    ok = all(s.settled_verified == s.tasks for s in steps)
    lines.append(f"  every task settled verified exactly once: {'yes' if ok else 'NO'}")
    return {
        "all_settled_verified": ok,
        "rounds": rounds,
        "medians": [asdict(m) for m in medians],
        "lines": lines,
    }
