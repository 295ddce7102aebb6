"""Where ``landed check`` puts what it grades: the streamed JSON document, or the report the
text view is drawn from; both count what decides the exit code."""

from __future__ import annotations

import shutil
import tempfile
from typing import IO, Any, Final

import orjson

from landed.receipts.check import Record
from landed.receipts.grading import RawGrade
from landed.receipts.intake import InvalidLine
from landed.receipts.ladder import ProofLevel
from landed.receipts.scorecard import Scorecard

__all__ = ["EXIT_INVALID", "EXIT_MISSED", "EXIT_OK", "CheckReport"]

EXIT_OK: Final = 0
EXIT_MISSED: Final = 1
EXIT_INVALID: Final = 3


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
