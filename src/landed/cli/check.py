"""``landed check``: score agent receipts (JSONL) against the Definition of Done v1.0."""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Annotated, Any, Final, TextIO

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from landed.cli import app
from landed.cli.out import reader_left
from landed.receipts.check import (
    FilePart,
    Record,
    SignatureCheck,
    check_range,
    check_stream,
    count_lines,
    split_point,
)
from landed.receipts.grading import RawGrade
from landed.receipts.intake import EMPTY_INPUT, InvalidLine
from landed.receipts.ladder import ProofLevel
from landed.receipts.live import LiveOptions
from landed.receipts.scorecard import Scorecard, ScoreTally, format_money, format_rate
from landed.signing import SigningError, TrustStore

__all__ = ["CheckReport", "TrustUnavailable", "render_text", "run_check"]

EXIT_OK: Final = 0
EXIT_MISSED: Final = 1
EXIT_INVALID: Final = 3

#: Offline, a file at least this large is graded in two processes (see run_check).
SPLIT_MIN_BYTES: Final = 32 << 20

_EPILOG = (
    "Exit codes: 0 every done claim (done, verified, reconciled and kin) meets its bar; "
    "1 at least one does not; 3 invalid input (a bad line, empty input, an unreadable file) "
    "or a --trust key that cannot be read. Invalid lines are reported and the rest is still "
    "scored. With --trust, a read-back whose signature is missing, unknown or wrong counts as "
    "an assertion; business_outcome.verified and landed.revenue_usd are not signed, so P4 needs "
    "a signed read-back of the kind the business outcome's class names (payment, sent_log, "
    "call_log, provider_object) and revenue counts only where a signed payment read-back "
    "observed that amount."
)


class TrustUnavailable(Exception):
    """A ``--trust`` key could not be read as an Ed25519 public key."""


def _load_trust(keys: str | Sequence[str] | None) -> SignatureCheck | None:
    """The signature check for ``--trust KEY.pub`` (repeatable), or None without one: a
    read-back proof then counts only with a valid signature by one of these keys."""
    if not keys:
        return None
    try:
        store = TrustStore.load([keys] if isinstance(keys, str) else keys)
    except SigningError as exc:
        raise TrustUnavailable(f"--trust: {exc}") from None
    return store.signature_ok


# --- sinks ---------------------------------------------------------------------------------------


_LABELS: Final = tuple(level.label for level in ProofLevel)


def _grade_json(graded: RawGrade) -> dict[str, Any]:
    """The fields of a task's JSON object that depend only on its grade."""
    level, required, claims_done, meets_bar, proven, findings, _ = graded
    return {
        "proof_level": _LABELS[level],
        "meets_bar": meets_bar,
        "findings": [{"rule": rule, "message": message} for rule, message in findings],
        "claims_done": claims_done,
        "required_level": None if required is None else _LABELS[required],
        "proven_status": proven,  # orjson writes an enum as its value
    }


def _task_json(line: int, record: Record, graded: RawGrade) -> dict[str, Any]:
    """One entry of ``tasks`` in ``landed check --json``."""
    return {
        "task_id": record.task_id,
        "claimed_status": record.claimed_status,
        **_grade_json(graded),
        "line": line,
    }


# Grades repeat across a file, so the grade's part of each task object is encoded once per
# distinct grade (bounded: a file of all-different grades just encodes each).
_TAIL_CACHE_MAX: Final = 4096


def _task_bytes(line: int, record: Record, graded: RawGrade, tails: dict[Any, bytes]) -> bytes:
    """``orjson.dumps(_task_json(line, record, graded))``, byte for byte."""
    # The claimed status and the grade repeat across a file; the task id and line don't.
    key = (record.claimed_status, graded)
    tail = tails.get(key)
    if tail is None:
        if len(tails) >= _TAIL_CACHE_MAX:
            tails.clear()
        tail = tails[key] = b'"claimed_status":%b,%b' % (
            orjson.dumps(record.claimed_status),
            orjson.dumps(_grade_json(graded))[1:-1],
        )
    return b'{"task_id":%b,%b,"line":%d}' % (orjson.dumps(record.task_id), tail, line)


class _Counts:
    __slots__ = ("invalid_count", "missed_count")

    def __init__(self) -> None:
        self.invalid_count = 0
        self.missed_count = 0

    def count(self, graded: RawGrade) -> None:
        if graded.claims_done and not graded.meets_bar:
            self.missed_count += 1

    @property
    def exit_code(self) -> int:
        if self.invalid_count:
            return EXIT_INVALID
        return EXIT_MISSED if self.missed_count else EXIT_OK


class _JsonSink(_Counts):
    """Writes ``{"tasks": [...], "invalid": [...], "scorecard": {...}}`` as it goes: tasks leave
    memory in batches, and invalid lines spill to a temporary file past a few megabytes."""

    __slots__ = ("_batch", "_file", "_invalid", "_out", "_started", "_tails")

    def __init__(self, out: IO[bytes], file: str, *, invalid: IO[bytes] | None = None) -> None:
        super().__init__()
        self._out = out
        self._file = file
        self._batch: list[bytes] = []
        self._tails: dict[Any, bytes] = {}
        self._started = False
        # Closed by finish(), which copies it out.
        self._invalid: IO[bytes] = (
            tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115
            if invalid is None
            else invalid
        )
        if invalid is None:  # the sink of a file's second part writes only its items
            out.write(b'{"tasks":[')

    def task(self, line: int, record: Record, graded: RawGrade) -> None:
        if graded.claims_done and not graded.meets_bar:
            self.missed_count += 1
        batch = self._batch
        batch.append(_task_bytes(line, record, graded, self._tails))
        if len(batch) >= 4096:
            self._flush()

    def invalid(self, item: InvalidLine) -> None:
        if self.invalid_count:
            self._invalid.write(b",")
        self.invalid_count += 1
        self._invalid.write(
            orjson.dumps({"line": item.line, "reason": item.reason, "file": self._file})
        )

    def _flush(self) -> None:
        if self._batch:
            if self._started:
                self._out.write(b",")
            self._out.write(b",".join(self._batch))
            self._started = True
            self._batch.clear()

    def part_state(self) -> tuple[bool, int, int]:
        """What the sink of a file's second part hands back (its items are in its files)."""
        self._flush()
        self._out.flush()
        self._invalid.flush()
        return self._started, self.invalid_count, self.missed_count

    def merge(self, state: tuple[bool, int, int], tasks: IO[bytes], invalid: IO[bytes]) -> None:
        """Append the second part's tasks and invalid lines after this part's."""
        started, invalid_count, missed_count = state
        self._flush()
        if started:
            if self._started:
                self._out.write(b",")
            tasks.seek(0)
            shutil.copyfileobj(tasks, self._out)
            self._started = True
        if invalid_count:
            if self.invalid_count:
                self._invalid.write(b",")
            invalid.seek(0)
            shutil.copyfileobj(invalid, self._invalid)
        self.invalid_count += invalid_count
        self.missed_count += missed_count

    def finish(self, scorecard: Scorecard) -> None:
        self._flush()
        self._out.write(b'],"invalid":[')
        with self._invalid:
            self._invalid.seek(0)
            shutil.copyfileobj(self._invalid, self._out)
        self._out.write(b'],"scorecard":' + orjson.dumps(scorecard.model_dump(mode="json")))
        self._out.write(b"}\n")
        self._out.flush()


class CheckReport(_Counts):
    """Keeps what the text report shows: the first ``max_rows`` tasks and invalid lines."""

    __slots__ = ("file", "hidden_missed", "hidden_tasks", "invalid_rows", "max_rows", "rows")

    def __init__(self, file: str, max_rows: int) -> None:
        super().__init__()
        self.file = file
        self.max_rows = max_rows
        self.rows: list[tuple[int, str, str, RawGrade]] = []
        self.invalid_rows: list[InvalidLine] = []
        self.hidden_tasks = 0
        self.hidden_missed = 0

    def task(self, line: int, record: Record, graded: RawGrade) -> None:
        self.count(graded)
        if len(self.rows) < self.max_rows:
            self.rows.append((line, record.task_id, record.claimed_status, graded))
        else:
            self.hidden_tasks += 1
            if graded.claims_done and not graded.meets_bar:
                self.hidden_missed += 1

    def invalid(self, item: InvalidLine) -> None:
        self.invalid_count += 1
        if len(self.invalid_rows) < self.max_rows:
            self.invalid_rows.append(item)

    def part_state(self) -> tuple[Any, ...]:
        """What the report of a file's second part hands back (bounded by ``max_rows``)."""
        return (
            self.rows,
            self.invalid_rows,
            self.hidden_tasks,
            self.hidden_missed,
            self.invalid_count,
            self.missed_count,
        )

    def merge(self, state: tuple[Any, ...]) -> None:
        """Take the second part's report as if its lines had come after this part's."""
        rows, invalid_rows, hidden_tasks, hidden_missed, invalid_count, missed_count = state
        for row in rows:
            if len(self.rows) < self.max_rows:
                self.rows.append(row)
            else:
                self.hidden_tasks += 1
                if row[3].claims_done and not row[3].meets_bar:
                    self.hidden_missed += 1
        self.hidden_tasks += hidden_tasks
        self.hidden_missed += hidden_missed
        room = self.max_rows - len(self.invalid_rows)
        self.invalid_rows.extend(invalid_rows[: max(room, 0)])
        self.invalid_count += invalid_count
        self.missed_count += missed_count


# --- text ----------------------------------------------------------------------------------------


def _clip(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# Control characters (C0, DEL, C1) and bidi overrides in text from a receipt would reach the
# terminal raw (an ESC clears the screen, a bidi override reverses the text): show them escaped.
_CONTROLS: Final = {
    c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"
    for c in (*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def _safe(text: str) -> str:
    """User text as plain, visible characters (no control characters)."""
    return text.translate(_CONTROLS)


def _cell(text: str, limit: int = 48) -> Text:
    """A table cell holding user text: never read as rich markup ("[/]" is a task id too)."""
    return Text(_clip(_safe(text), limit))


def render_text(report: CheckReport, scorecard: Scorecard, console: Console) -> None:
    """The per-task table, the invalid lines, the scorecard and a one-line summary."""
    if report.rows:
        table = Table(title=Text(f"landed check: {_safe(report.file)}"), title_justify="left")
        table.add_column("line", justify="right", style="dim")
        table.add_column("task", overflow="fold")
        table.add_column("claimed", overflow="fold")
        table.add_column("proven", no_wrap=True)
        table.add_column("meets bar", justify="center", no_wrap=True)
        table.add_column("findings by rule", overflow="fold")
        for line, task_id, claimed, graded in report.rows:
            if not graded.claims_done:
                bar = "[dim]no claim[/dim]"
            else:
                bar = "[green]yes[/green]" if graded.meets_bar else "[bold red]NO[/bold red]"
            rules = " ".join(dict.fromkeys(rule for rule, _ in graded.findings)) or "-"
            proven = f"{graded.proof_level.label} {graded.proven_status.value}"
            table.add_row(str(line), _cell(task_id), _cell(claimed, 24), proven, bar, rules)
        console.print(table)
        explained = [row for row in report.rows if row[3].findings]
        if explained:
            console.print("[bold]findings[/bold]")
        for line, task_id, _claimed, graded in explained:
            console.print(f"  {_safe(task_id)} (line {line})", markup=False, highlight=False)
            for rule, message in graded.findings:
                console.print(
                    f"    {rule:<6} {_safe(message)}", markup=False, highlight=False, soft_wrap=True
                )
    if report.hidden_tasks:
        console.print(
            f"... {report.hidden_tasks:,} more task(s) not shown, {report.hidden_missed:,} of "
            "them missing the bar; --json lists every task, --max-rows shows more"
        )
    whole = [item for item in report.invalid_rows if not item.line]
    # Nothing could be read at all (no file, an empty one): no lines, and no scorecard of
    # zeros that would read like a result.
    unread = bool(whole) and report.invalid_count == len(whole)
    if unread:
        for item in whole:
            console.print(
                f"[bold red]not scored[/bold red]: {escape(_safe(report.file))}: "
                f"{escape(_safe(item.reason))}",
                highlight=False,
                soft_wrap=True,
            )
    elif report.invalid_count:
        console.print(
            f"[bold red]{report.invalid_count:,} invalid line(s)[/bold red] (not scored):"
        )
        for item in report.invalid_rows:
            where = f"{report.file}:{item.line}" if item.line else report.file
            console.print(
                f"  {_safe(where)}: {_safe(item.reason)}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        if report.invalid_count > len(report.invalid_rows):
            console.print(f"  ... and {report.invalid_count - len(report.invalid_rows):,} more")
    if not unread:
        _render_scorecard(scorecard, console)
    verdicts = {
        EXIT_OK: "[green]every done claim meets its bar[/green]",
        EXIT_MISSED: f"[bold red]{report.missed_count:,} done claim(s) miss the bar[/bold red]",
        EXIT_INVALID: "[bold red]invalid input[/bold red]",
    }
    console.print(f"{verdicts[report.exit_code]} (exit {report.exit_code})")


def _render_scorecard(card: Scorecard, console: Console) -> None:
    table = Table(title="governance scorecard", title_justify="left", show_header=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("from", style="dim")
    table.add_row(
        "proof rate",
        format_rate(card.proof_rate),
        f"{card.done_proven:,} of {card.done_claimed:,} done claims at P3+",
    )
    table.add_row(
        "hold rate", format_rate(card.hold_rate), f"{card.held:,} held of {card.settled:,}"
    )
    table.add_row(
        "cost per verified task",
        format_money(card.cost_per_verified_task),
        f"{format_money(card.cost_usd)} over {card.done_proven:,} verified "
        f"({card.cost_logged:,} of {card.settled:,} receipts log cost)",
    )
    table.add_row("verified revenue", format_money(card.verified_revenue_usd), "P4 receipts only")
    console.print(table)


# --- the command ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _open_source(source: str) -> Iterator[tuple[IO[bytes] | None, str, str | None]]:
    """Yield (stream, display name, error): stdin for "-", else the file, never a traceback."""
    if source == "-":
        yield sys.stdin.buffer, "<stdin>", None
        return
    path = Path(source)
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        yield None, source, "no such file; pass a JSONL file of receipts, or - for stdin"
        return
    except IsADirectoryError:
        yield None, source, "a directory, not a file; pass a JSONL file of receipts"
        return
    except OSError as exc:
        yield None, source, f"cannot be read ({exc.strerror}); check the path and its permissions"
        return
    with handle:
        yield handle, source, None


@contextlib.contextmanager
def _progress_bar(enabled: bool) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr, only when stderr is a terminal and --live is on."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    columns = (
        TextColumn("re-reading http_contains proofs"),
        BarColumn(),
        TextColumn("{task.completed:,}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("live", total=None)
        yield lambda n: bar.advance(task, n)


def run_check(
    source: str,
    *,
    live: bool = False,
    as_json: bool = False,
    trust: str | Sequence[str] | None = None,
    concurrency: int = 32,
    timeout: float = 10.0,
    live_private: bool = False,
    max_rows: int = 200,
    out: TextIO | None = None,
    split_min_bytes: int = SPLIT_MIN_BYTES,
) -> int:
    """Everything ``landed check`` does; returns the exit code. ``out`` defaults to stdout. An
    offline check of a file of at least ``split_min_bytes`` grades its second half in a second
    process, with the same results."""
    stdout = out if out is not None else sys.stdout
    err = Console(stderr=True, emoji=False)
    try:
        signature_ok = _load_trust(trust)
    except TrustUnavailable as exc:
        err.print(f"[bold red]error:[/bold red] {escape(_safe(str(exc)))}", highlight=False)
        if as_json:
            # A --json caller parses stdout whatever happened: the refusal is one object too.
            line = orjson.dumps({"error": "trust unavailable", "message": _safe(str(exc))})
            stdout.write(line.decode() + "\n")
            stdout.flush()
        return EXIT_INVALID
    options = (
        LiveOptions(concurrency=concurrency, timeout_s=timeout, allow_private=live_private)
        if live
        else None
    )
    with _open_source(source) as (stream, name, problem):
        sink: _JsonSink | CheckReport
        sink = _JsonSink(stdout.buffer, name) if as_json else CheckReport(name, max_rows)
        if stream is None:
            sink.invalid(InvalidLine(line=0, reason=problem or "unreadable"))
            card = Scorecard(**_EMPTY_CARD)
        else:
            split = None
            if options is None and signature_ok is None:
                split = split_point(stream.fileno(), split_min_bytes) if _has_fd(stream) else None
            if split is not None:
                card = _check_split(stream.fileno(), split, sink, name, max_rows)
            else:
                with _progress_bar(live) as progress:
                    card = check_stream(
                        stream, sink, live=options, signature_ok=signature_ok, progress=progress
                    )
    if isinstance(sink, _JsonSink):
        sink.finish(card)
        if problem:
            err.print(
                f"[bold red]error:[/bold red] {escape(_safe(f'{name}: {problem}'))}",
                highlight=False,
            )
    else:
        render_text(sink, card, Console(file=stdout, width=_width(stdout), emoji=False))
    return sink.exit_code


def _has_fd(stream: IO[bytes]) -> bool:
    try:
        stream.fileno()
    except (OSError, ValueError, AttributeError):
        return False
    return True


def _check_split(
    fd: int, split: int, sink: _JsonSink | CheckReport, name: str, max_rows: int
) -> Scorecard:
    """Grade bytes ``split``.. of ``fd`` in a forked process while this one grades the bytes
    before, then merge: the same tasks, invalid lines, numbers and scorecard, in the same order,
    as one process. If the second process fails, this one grades its part too."""
    size = os.fstat(fd).st_size
    with (
        tempfile.TemporaryFile() as state_file,
        tempfile.TemporaryFile() as tasks_file,
        tempfile.TemporaryFile() as invalid_file,
    ):
        pid = os.fork()
        if pid == 0:  # the second process: never returns
            code = 70
            try:
                part: _JsonSink | CheckReport
                if isinstance(sink, _JsonSink):
                    part = _JsonSink(tasks_file, name, invalid=invalid_file)
                else:
                    part = CheckReport(name, max_rows)
                tally = ScoreTally()
                seen, _ = check_range(
                    FilePart(fd, split, size),
                    part,
                    tally,
                    first_line=count_lines(fd, split),
                    at_start=False,
                )
                pickle.dump((tally, seen, part.part_state()), state_file)
                state_file.flush()
                code = 0
            finally:
                os._exit(code)
        tally = ScoreTally()
        seen, last = check_range(FilePart(fd, 0, split), sink, tally)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) == 0:
            state_file.seek(0)
            part_tally, part_seen, state = pickle.load(state_file)
            tally.merge(part_tally)
            if isinstance(sink, _JsonSink):
                sink.merge(state, tasks_file, invalid_file)
            else:
                sink.merge(state)
        else:
            part_seen, _ = check_range(
                FilePart(fd, split, size), sink, tally, first_line=last, at_start=False
            )
    if not (seen or part_seen):
        sink.invalid(EMPTY_INPUT)
    return tally.scorecard()


_EMPTY_CARD: Final[dict[str, Any]] = {
    "done_claimed": 0,
    "done_proven": 0,
    "proof_rate": None,
    "held": 0,
    "settled": 0,
    "hold_rate": None,
    "cost_usd": None,
    "cost_logged": 0,
    "cost_per_verified_task": None,
    "verified_revenue_usd": 0.0,
}


def _width(stream: TextIO) -> int | None:
    # A pipe or file gets a wide table rather than rich's 80-column default.
    return None if stream.isatty() else 160


@app.command("check", epilog=_EPILOG)
def check(
    file: Annotated[str, typer.Argument(metavar="FILE|-", help="JSONL receipts; - reads stdin.")],
    live: Annotated[
        bool,
        typer.Option(
            "--live",
            help="Re-read every http_contains proof over HTTP; a proof that "
            "no longer holds is downgraded (DOD-4/DOD-5), nothing is ever upgraded.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object: tasks, invalid, scorecard.")
    ] = False,
    trust: Annotated[
        list[str] | None,
        typer.Option(
            "--trust",
            metavar="KEY.pub",
            help="A verifier's public key (repeatable; a directory adds its *.pub). A read-back "
            "then counts only with a valid signature by a trusted key.",
        ),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(min=1, max=256, help="--live: requests in flight at once.")
    ] = 32,
    timeout: Annotated[
        float, typer.Option(min=0.1, max=600.0, help="--live: seconds allowed per request.")
    ] = 10.0,
    live_private: Annotated[
        bool,
        typer.Option(
            "--live-private",
            help="--live: also re-read pages on loopback, private and link-local addresses "
            "(off: receipts come from agents, and a ref or a redirect pointing into your network "
            "would have the checker read it).",
        ),
    ] = False,
    max_rows: Annotated[
        int, typer.Option(min=0, help="Text report: tasks shown in the table (--json lists all).")
    ] = 200,
) -> None:
    """Score agent receipts against the Definition of Done v1.0: proof level per task, whether
    each done claim meets its bar, and the governance scorecard."""
    try:
        code = run_check(
            file,
            live=live,
            as_json=as_json,
            trust=trust,
            concurrency=concurrency,
            timeout=timeout,
            live_private=live_private,
            max_rows=max_rows,
        )
    except BrokenPipeError:
        # The reader left before every verdict was printed: stop quietly, and fail closed.
        reader_left()
        code = EXIT_MISSED
    raise typer.Exit(code)
