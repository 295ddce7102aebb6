"""Run landed's benchmarks: ``python -m bench`` runs all, ``python -m bench NAME ...`` some."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys
from pathlib import Path

#: name -> module; each module has ``main(argv: list[str] | None = None) -> int`` (0 = target met).
BENCHMARKS: dict[str, str] = {
    "check_offline": "bench.check_offline",
    "check_live": "bench.check_live",
    "ledger_append": "bench.ledger_append",
    "ledger_verify": "bench.ledger_verify",
    # Reads that do not grow with the ledger: 10,000 and 1,000,000 receipts (issue 33).
    "ledger_reads": "bench.ledger_reads",
    "temporal_throughput": "bench.temporal_throughput",
    # One task's time from start to its settled receipt, beside its floors.
    "latency": "bench.latency",
    # Each role's peak RSS with 2,000 tasks in flight at once, nothing lost (issue 33).
    "memory": "bench.memory",
    "probe_http": "bench.probe_http",
    "probe_command": "bench.probe_command",
    "probe_record": "bench.probe_record",
    "chaos": "bench.chaos",
    "plan_lint": "bench.plan_lint",
    "tracing_spans": "bench.tracing_spans",
    "confirm": "bench.confirm",
    "exporter_scrape": "bench.exporter_scrape",
    # Start-up to a complete first scrape, cold beside resumed from the state file.
    "exporter_start": "bench.exporter_start",
    # Bounded labels: 1,000,000 receipts from 10,000 owners and 1,000 loops.
    "exporter_cardinality": "bench.exporter_cardinality",
    # Scale-out: N processes per role against one Temporal server (issue 27).
    "scale_out": "bench.scale_out",
    # governance gates: the consent read and the approval decision
    "gates": "bench.gates",
    # The claim-stream reconciler: VerifyClaim beside AgentTask (pre-read off).
    "reconcile": "bench.reconcile",
    # The tripwire's read of its loop's stream at 10,000 and 1,000,000 receipts.
    "tripwire": "bench.tripwire",
    # The runner CPU a tripwire adds per loop task (a landed dev stack).
    "tripwire_cpu": "bench.tripwire_cpu",
    # --- fleet: the kill switch's latencies (GOV-4) ---
    "pause": "bench.pause",
}


def usage() -> str:
    """Each benchmark's name and the first line of what it measures."""
    lines = ["python -m bench [NAME ...]: run the named benchmarks (all when none is named)", ""]
    for name, module in BENCHMARKS.items():
        spec = importlib.util.find_spec(module)
        doc = ""
        if spec is not None and spec.origin is not None:
            doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text())) or ""
        lines.append(f"  {name:<22} {doc.splitlines()[0] if doc else ''}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if {"-h", "--help"} & set(argv):
        print(usage())
        return 0
    names = argv or list(BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
        return 2
    status = 0
    for name in names:
        print(f"== {name}", flush=True)
        code = importlib.import_module(BENCHMARKS[name]).main([])
        status = status or code
    return status


if __name__ == "__main__":
    # Leave with os._exit: the Temporal benchmark used the SDK, which can crash in interpreter
    # teardown after every figure was printed (sdk-python#300).
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
