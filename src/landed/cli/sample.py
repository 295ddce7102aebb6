"""``landed sample``: run the checker on the shipped sample receipts and confirm its verdicts."""

from __future__ import annotations

import io
from importlib import resources
from typing import Annotated, Final, NamedTuple

import orjson
import typer

from landed.cli.check_render import render_text
from landed.cli.check_sinks import CheckReport
from landed.cli.out import emit
from landed.cli.report_console import ReportConsole
from landed.cli.root import app
from landed.receipts.check import check_stream
from landed.receipts.ladder import ProofLevel, Status

__all__ = ["EXPECTED", "Expected", "sample", "sample_bytes"]


class Expected(NamedTuple):
    level: ProofLevel
    meets_bar: bool
    status: Status
    rules: frozenset[str]


#: What the checker must conclude about each sample task; the command fails loudly otherwise.
EXPECTED: Final = {
    "publish-pricing-page": Expected(ProofLevel.P3, True, Status.VERIFIED, frozenset()),
    "line-2": Expected(ProofLevel.P0, False, Status.PLANNED, frozenset({"DOD-6"})),
    "insert-45-rows": Expected(
        ProofLevel.P2, False, Status.BUILT, frozenset({"DOD-2", "DOD-3", "DOD-6"})
    ),
    "send-renewal-emails": Expected(ProofLevel.P1, True, Status.HELD, frozenset()),
    "point-dns-at-new-site": Expected(ProofLevel.P3, False, Status.EXECUTED, frozenset({"DOD-7"})),
    "checkout-redesign": Expected(
        ProofLevel.P2, False, Status.BUILT, frozenset({"DOD-8", "DOD-6", "DOD-3"})
    ),
    "invoice-acme-october": Expected(ProofLevel.P4, True, Status.RECONCILED, frozenset()),
}
SAMPLE: Final = "receipts.jsonl"


def sample_bytes() -> bytes:
    """The shipped sample receipts (installed with the package)."""
    return resources.files("landed").joinpath("samples", SAMPLE).read_bytes()


def mismatches(report: CheckReport) -> list[str]:
    """Every way the report differs from EXPECTED; empty when the checker agrees."""
    problems: list[str] = []
    seen: set[str] = set()
    for _line, task_id, _claimed, graded in report.rows:
        seen.add(task_id)
        want = EXPECTED.get(task_id)
        if want is None:
            problems.append(f"{task_id}: not an expected sample task")
            continue
        got = (graded.proof_level, graded.meets_bar, graded.proven_status)
        if got != (want.level, want.meets_bar, want.status):
            problems.append(
                f"{task_id}: expected {want.level.label}/meets_bar={want.meets_bar}/"
                f"{want.status.value}, got {got[0].label}/meets_bar={got[1]}/{got[2].value}"
            )
        rules = {rule for rule, _ in graded.findings}
        if not want.rules <= rules or (not want.rules and rules):
            problems.append(f"{task_id}: expected rules {sorted(want.rules)}, got {sorted(rules)}")
    problems.extend(f"{task_id}: missing from the report" for task_id in EXPECTED.keys() - seen)
    if report.invalid_count:
        problems.append(f"{report.invalid_count} sample line(s) were invalid")
    return problems


@app.command("sample")
def sample(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the expected-vs-actual comparison as JSON.")
    ] = False,
) -> None:
    """Check the shipped sample receipts (good, loose, overclaimed, held, blocked in words,
    scaffold, reconciled with revenue), print the report, and confirm every verdict.

    Exit codes: 0 the checker reached the expected verdict on every sample task (the sample's
    own overclaims are the point, not a failure); 1 it did not.
    """
    report = CheckReport(f"landed/samples/{SAMPLE}", max_rows=len(EXPECTED) + 10)
    card = check_stream(io.BytesIO(sample_bytes()), report)
    problems = mismatches(report)
    if as_json:
        payload = {
            "sample": SAMPLE,
            "expected_verdicts_match": not problems,
            "mismatches": problems,
            "check_exit_code": report.exit_code,
            "scorecard": card.model_dump(mode="json"),
        }
        emit(orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        console = ReportConsole()
        render_text(report, card, console)
        if problems:
            console.print("[bold red]sample: the checker's verdicts differ from the expected:[/]")
            for problem in problems:
                console.print(f"  {problem}", markup=False, highlight=False)
        else:
            console.print(
                f"sample: the checker reached the expected verdict on all {len(EXPECTED)} "
                "sample tasks; the overclaims above are the sample's point, so this exits 0"
            )
    raise typer.Exit(1 if problems else 0)
