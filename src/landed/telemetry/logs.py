"""One structured log line per task event (acted, read, settled), with the trace it belongs to.

Each role writes its own events to stderr: ``key=value`` text by default, one JSON object per
line when ``LANDED_LOG_FORMAT=json``. The trace id (32 hex digits, or null when tracing is off)
finds the same task's spans in the tracing backend.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from typing import IO, Any

from opentelemetry.trace import get_current_span

__all__ = [
    "FORMATS",
    "LOGGER",
    "LogFormatError",
    "configure",
    "current_trace_id",
    "log_format",
    "task_event",
]

#: The logger every task event goes to.
LOGGER = "landed.tasks"
FORMATS = ("text", "json")
_log = logging.getLogger(LOGGER)


class LogFormatError(ValueError):
    """LANDED_LOG_FORMAT names no known format."""


def current_trace_id() -> str | None:
    """The trace id of the span in effect, or None where there is none."""
    ctx = get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


def task_event(event: str, *, role: str, task_id: str, attempt: int, **fields: Any) -> None:
    """Log one task event; ``fields`` add what the event knows (verdict, phase, outcomes)."""
    if not _log.isEnabledFor(logging.INFO):
        return
    record = {
        "event": event,
        "role": role,
        "task_id": task_id,
        "attempt": attempt,
        "verdict": fields.pop("verdict", None),
        "trace_id": current_trace_id(),
        **fields,
    }
    _log.info(event, extra={"landed": record})


class _Formatter(logging.Formatter):
    def __init__(self, as_json: bool) -> None:
        super().__init__()
        self._json = as_json

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = dict(getattr(record, "landed", None) or {"event": record.msg})
        if self._json:
            return json.dumps(data, sort_keys=True, default=str)
        # Values quoted as JSON strings: a task id with spaces or '=' stays one field.
        parts = (f"{k}={json.dumps(v, default=str)}" for k, v in data.items() if k != "event")
        return f"landed {data.get('event')} " + " ".join(parts)


def log_format(env: Mapping[str, str] | None = None, role: str | None = None) -> str:
    """The format the environment names: the role's own LANDED_<ROLE>_LOG_FORMAT (what
    `landed dev` hands each role), else LANDED_LOG_FORMAT, else text."""
    env = os.environ if env is None else env
    names = [f"LANDED_{role.upper()}_LOG_FORMAT"] if role else []
    for name in [*names, "LANDED_LOG_FORMAT"]:
        value = env.get(name, "").strip().lower()
        if value:
            if value not in FORMATS:
                raise LogFormatError(
                    f"{name}={value!r} is not a log format; set it to {' or '.join(FORMATS)}"
                )
            return value
    return "text"


def configure(
    stream: IO[str] | None = None, env: Mapping[str, str] | None = None, role: str | None = None
) -> None:
    """Send task events to ``stream`` (stderr) in the format the environment names; once per
    process (a second call replaces the first handler)."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(_Formatter(as_json=log_format(env, role) == "json"))
    for old in list(_log.handlers):
        _log.removeHandler(old)
    _log.addHandler(handler)
    _log.setLevel(logging.INFO)
    _log.propagate = False
