"""``landed check``: score agent receipts (JSONL) against the Definition of Done v1.0."""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, Final, TextIO

import orjson
import typer

from landed.cli.check_sinks import EXIT_INVALID, EXIT_MISSED, CheckReport, _JsonSink
from landed.cli.out import reader_left
from landed.cli.root import app
from landed.receipts.check import (
    ApprovalCheck,
    FilePart,
    SignatureCheck,
    check_range,
    check_stream,
    count_lines,
    split_point,
)
from landed.receipts.intake import EMPTY_INPUT, InvalidLine
from landed.receipts.live_options import LiveOptions
from landed.receipts.scorecard import Scorecard, ScoreTally

if TYPE_CHECKING:
    from landed.cli.check_render import render_text

# rich (the text report, errors, the progress bar) and the signing keys (--trust) are imported
# where they are used: ``landed check FILE --json`` needs neither, and on a file of 300,000 lines
# start-up is a share of the whole run (issue 33).

__all__ = ["CheckReport", "TrustUnavailable", "render_text", "run_check"]


def __getattr__(name: str) -> Any:
    if name == "render_text":  # kept importable from here, as before
        from landed.cli.check_render import render_text

        return render_text
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "observed that amount. A receipt that claims an approval counts at most as an artifact "
    "(P2, GOV-5) unless a --trust-approver key signed that decision for its task, run and spec."
)


class TrustUnavailable(Exception):
    """A ``--trust`` key could not be read as an Ed25519 public key."""


def _load_trust(keys: str | Sequence[str] | None) -> SignatureCheck | None:
    """The signature check for ``--trust KEY.pub`` (repeatable), or None without one: a
    read-back proof then counts only with a valid signature by one of these keys."""
    if not keys:
        return None
    from landed.signing import SigningError, TrustStore

    try:
        store = TrustStore.load([keys] if isinstance(keys, str) else keys)
    except SigningError as exc:
        raise TrustUnavailable(f"--trust: {exc}") from None
    return store.signature_ok


def _load_approvers(keys: str | Sequence[str] | None) -> ApprovalCheck:
    """The approval check under --trust: a receipt that claims an approval must carry a
    decision signed by one of ``--trust-approver``'s keys (none given: no approval verifies)."""
    from landed.governance.approval import receipt_approval_problem
    from landed.signing import SigningError, TrustStore

    try:
        store = TrustStore.load([keys] if isinstance(keys, str) else keys or [])
    except SigningError as exc:
        raise TrustUnavailable(f"--trust-approver: {exc}") from None
    return lambda receipt: receipt_approval_problem(receipt, store)


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
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

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
    trust_approver: str | Sequence[str] | None = None,
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
    try:
        signature_ok = _load_trust(trust)
        if trust_approver and signature_ok is None:
            raise TrustUnavailable(
                "--trust-approver checks approvals under signature checks: pass the verifier's "
                "key with --trust too"
            )
        approval_check = _load_approvers(trust_approver) if signature_ok is not None else None
    except TrustUnavailable as exc:
        from landed.cli.check_render import _safe

        _error(str(exc))
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
                        stream,
                        sink,
                        live=options,
                        signature_ok=signature_ok,
                        approval_check=approval_check,
                        progress=progress,
                    )
    if isinstance(sink, _JsonSink):
        sink.finish(card)
        if problem:
            _error(f"{name}: {problem}")
    else:
        from rich.console import Console

        from landed.cli.check_render import render_text

        render_text(sink, card, Console(file=stdout, width=_width(stdout), emoji=False))
    return sink.exit_code


def _error(message: str) -> None:
    """Say ``message`` on stderr as an error: plain text, never read as markup."""
    from rich.console import Console
    from rich.markup import escape

    from landed.cli.check_render import _safe

    err = Console(stderr=True, emoji=False)
    err.print(f"[bold red]error:[/bold red] {escape(_safe(message))}", highlight=False)


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
    trust_approver: Annotated[
        list[str] | None,
        typer.Option(
            "--trust-approver",
            metavar="KEY.pub",
            help="With --trust: an approver's public key (repeatable; a directory adds its "
            "*.pub). A receipt that claims an approval then counts as verified only when a "
            "trusted approver key signed that decision for its task, run and spec.",
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
            trust_approver=trust_approver,
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
