"""What ``bench temporal_throughput`` prints: each flow's rate, CPU per task and history events
beside act alone and beside its own same-step floor, from the same run; the ratios per round,
CPU by process, each landed flow's steps, and the targets."""

from __future__ import annotations

import os
import statistics
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.temporal_throughput import Tally

__all__ = ["FLOWS", "TARGET_RATE", "TARGET_RATIO", "report"]

# The first turn's targets (the Temporal spine): the lean flow against act alone.
TARGET_RATIO = 0.65
TARGET_RATE = 30.0
# Issue 33's: each landed flow against the Temporal floor with exactly its steps, and the
# default flow against act alone.
TARGET_OF_FLOOR = 0.9
TARGET_SERVER_CPU = 1.15
TARGET_DEFAULT = 0.5

#: flow -> what it runs, printed beside its figures.
FLOWS = {
    "baseline": "same act alone (BenchActOnly)",
    "floor": "act + one read, nothing else",
    "floor_la": "floor + two empty local activities",
    "lean_floor": "lean flow's steps, empty bodies",
    "lean": "landed, pre-read off (act+verify+settle)",
    "default_floor": "default flow's steps, empty bodies",
    "default": "landed, default flow (pre-read on)",
}
#: landed flow -> its same-step floor.
FLOOR_OF = {"lean": "lean_floor", "default": "default_floor"}


def report(t: Tally, rounds: int, window: float, concurrency: int) -> bool:
    """Print the figures; whether every target was met."""
    rate = {name: t.done[name] / t.seconds[name] for name in FLOWS}
    ms = {
        name: {p: sec * 1000 / max(t.done[name], 1) for p, sec in t.cpu[name].items()}
        for name in FLOWS
    }
    print(
        f"temporal throughput on landed dev ({rounds} rounds, each flow measured for {window:g} s "
        f"per round once its {concurrency} tasks in flight have turned over, flows in rotated "
        "order; confirmation interval 0)"
    )
    _table(t, rate, ms)
    for name, steps in t.steps.items():
        print(f"  {name} flow's steps ({len(steps)}): {', '.join(steps)}")
    _rounds(t)
    _cpu(ms)
    return _targets(t, rate, ms)


def _table(t: Tally, rate: dict[str, float], ms: dict[str, dict[str, float]]) -> None:
    print(
        f"  {'flow':<14}{'what it runs':<42}{'tasks/s':>8}{'x act':>7}{'x floor':>8}"
        f"{'cpu ms':>8}{'server':>8}{'wf wkr':>8}{'events':>7}  passed"
    )
    for name, what in FLOWS.items():
        floor = FLOOR_OF.get(name)
        of_floor = f"{rate[name] / rate[floor]:.2f}" if floor and rate[floor] else "-"
        per = ms[name]
        print(
            f"  {name:<14}{what:<42}{rate[name]:8.1f}{rate[name] / rate['baseline']:7.2f}"
            f"{of_floor:>8}{sum(per.values()):8.1f}{per.get('server', 0.0):8.1f}"
            f"{per.get('workflow', 0.0):8.1f}{t.events.get(name, 0):7d}  "
            f"{t.passed[name]}/{t.done[name]}"
        )


def _rounds(t: Tally) -> None:
    names = [n for n in FLOWS if n != "baseline"]
    # Each flow's ratio paired with the baseline of its own round: a round that other load
    # on the machine slowed unevenly weighs on the median less than on the totals.
    per_round = [{n: r[n] / r["baseline"] for n in names} for r in t.round_rates if r["baseline"]]
    if not per_round:
        return
    for k, r in enumerate(t.round_rates):
        print(f"  round {k + 1} tasks/s: " + ", ".join(f"{n} {r[n]:.1f}" for n in FLOWS))
    shown = ", ".join(f"{n} {statistics.median(r[n] for r in per_round):.2f}" for n in names)
    print(f"  median per-round ratio to act alone: {shown}")
    own = ", ".join(
        f"{n} {statistics.median(r[n] / r[f] for r in t.round_rates if r[f]):.2f}"
        for n, f in FLOOR_OF.items()
    )
    print(f"  median per-round ratio to its own floor: {own}")


def _cpu(ms: dict[str, dict[str, float]]) -> None:
    cores = os.cpu_count() or 1
    total = {name: sum(per.values()) for name, per in ms.items()}
    ceilings = ", ".join(f"{name} {cores * 1000 / total[name]:.0f}/s" for name in FLOWS)
    print(f"  cpu-bound ceiling on {cores} dedicated cores: {ceilings}")
    for label, per in ms.items():
        parts = "  ".join(f"{name} {value:5.1f}" for name, value in per.items())
        print(f"  cpu ms/task by process, {label:14s}: {parts}")
    # The actor runs the same act in every flow: CPU counted in units of the actor's own cancels
    # the machine speeding up or slowing down between phases, which wall-clock rates cannot.
    if all(per.get("actor") for per in ms.values()):
        shown = ", ".join(f"{n} {total[n] / ms[n]['actor']:.1f}" for n in FLOWS)
        print(f"  cpu in units of the actor's (drift between phases cancels): {shown}")


def _targets(t: Tally, rate: dict[str, float], ms: dict[str, dict[str, float]]) -> bool:
    checks: list[tuple[str, bool]] = []
    for name, floor in FLOOR_OF.items():
        of_floor = rate[name] / rate[floor] if rate[floor] else 0.0
        server = ms[name].get("server", 0.0) / max(ms[floor].get("server", 0.0), 1e-9)
        checks.append(
            (
                f"{name} {of_floor:.2f}x its floor's rate >= {TARGET_OF_FLOOR}x",
                of_floor >= TARGET_OF_FLOOR,
            )
        )
        checks.append(
            (
                f"{name} server cpu {server:.2f}x its floor's <= {TARGET_SERVER_CPU}x",
                server <= TARGET_SERVER_CPU,
            )
        )
    default = rate["default"] / rate["baseline"]
    checks.append(
        (f"default {default:.2f}x act alone >= {TARGET_DEFAULT}x", default >= TARGET_DEFAULT)
    )
    lean = rate["lean"] / rate["baseline"]
    checks.append((f"lean {lean:.2f}x act alone >= {TARGET_RATIO}x", lean >= TARGET_RATIO))
    verified = t.passed["lean"] / t.seconds["lean"]
    checks.append(
        (
            f"lean {verified:.1f} verified/s >= {TARGET_RATE:.0f}/s, none failed",
            verified >= TARGET_RATE and t.failed["lean"] == 0,
        )
    )
    print(
        "  not verified or not read back as pass, ramp and drain included: "
        + ", ".join(f"{name} {count}" for name, count in t.failed.items())
    )
    for label, ok in checks:
        print(f"  target    {label}: {'met' if ok else 'NOT met'}")
    met = all(ok for _, ok in checks)
    print(f"  targets {'all met' if met else 'NOT all met'}")
    return met
