"""`landed demo`'s claim table leads each settled claim with DONE or NOT DONE; a line that
never became a claim (invalid) says only that."""

from __future__ import annotations

import io

from rich.console import Console

from landed.cli.demo.reconcile import print_claims


def _row(line: int, verdict: str, level: str | None) -> dict[str, object]:
    return {
        "line": line,
        "story": f"claim {line}",
        "message": "",
        "claimed": "done",
        "verdict": verdict,
        "proof_level": level,
        "expected": verdict,
        "existing": False,
        "ok": True,
    }


def test_each_settled_claim_reads_done_or_not_done() -> None:
    out = io.StringIO()
    rows = [_row(1, "verified", "P3"), _row(2, "planned", "P1"), _row(3, "invalid", None)]
    print_claims(Console(file=out, width=200), rows)
    lines = {
        line.split("│")[1].strip(): line for line in out.getvalue().splitlines() if "│" in line
    }
    assert "DONE verified (P3)" in lines["1"] and "NOT DONE" not in lines["1"]
    assert "NOT DONE planned (P1)" in lines["2"]
    assert "DONE" not in lines["3"] and "invalid" in lines["3"]
