"""``landed guard``: re-run every declared completion contract; block unless all of them landed.

One code path serves the command line and the Claude Code Stop hook: ``run_guard`` decides,
and only the rendering differs. Everything is inside one fail-closed wrapper: anything that
goes wrong, including a crash of guard itself, blocks. The UserPromptSubmit hook only takes the
turn's before-readings (``landed.probes.snapshot``), which Stop then judges against.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from landed.probes.coerce import describe_error
from landed.probes.contract import Contract, Outcome
from landed.probes.observe import observe
from landed.probes.settings import ConfigError
from landed.probes.snapshot import (
    Snapshot,
    SnapshotError,
    find_before,
    read_snapshot,
    take_snapshot,
    turn_path,
    write_snapshot,
)
from landed.probes.sources import SourceRegistry, load_registry
from landed.probes.verdict import WEAK_NOTE, Verdict
from landed.util import strictjson
from landed.util.redact import escape_for_humans

__all__ = [
    "BLOCK_EXIT",
    "HOOKS",
    "MAX_CONTRACTS_BYTES",
    "GuardResult",
    "check_contracts",
    "load_contracts",
    "run_guard",
]

BLOCK_EXIT = 2
HOOKS = ("claude-code",)
MAX_CONTRACTS_BYTES = 4 * 1024 * 1024
_MAX_HOOK_INPUT = 4 * 1024 * 1024
_CONCURRENCY = 4
_EVIDENCE_IN_REASON = 300


class ContractsUnreadable(Exception):
    """The contracts file cannot be read or is not UTF-8 text."""


@dataclass
class _Item:
    line: int
    action: str
    verdict: Verdict | None = None
    problem: str = ""
    #: Before-readings were taken, but none of this contract (it was added after them).
    unbefored: bool = False

    @property
    def landed(self) -> bool:
        return self.verdict is not None and self.verdict.landed and not self.problem


@dataclass
class GuardResult:
    """What guard decided and what it says; ``exit_code`` is 0 (allow) or 2 (block)."""

    block: bool
    #: A UserPromptSubmit hook's answer: the before-state was taken (or why not); never a block.
    captured: bool = False
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    items: list[_Item] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return BLOCK_EXIT if self.block else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": "block" if self.block else "allow",
            "reasons": self.reasons,
            "notes": self.notes,
            "contracts": [
                {
                    "line": item.line,
                    "action": item.action,
                    "landed": item.landed,
                    "problem": item.problem or None,
                    "verdict": item.verdict.model_dump(mode="json") if item.verdict else None,
                }
                for item in self.items
            ],
        }


def load_contracts(path: Path) -> tuple[list[tuple[int, Contract]], list[_Item]]:
    """Parse JSONL contracts. Unreadable files raise; each bad line is returned as a problem."""
    try:
        # Bounded as read, not by the size the file claims: a FIFO or a device has none.
        raw = strictjson.read_at_most(path, MAX_CONTRACTS_BYTES, str(path))
        text = raw.decode("utf-8")
        if text.startswith("\ufeff"):  # a UTF-8 byte-order mark, as some editors write
            text = text[1:]
    except FileNotFoundError:
        raise ContractsUnreadable(
            f"the contracts file {path} does not exist; create it (one JSON contract per line) "
            "or fix --contracts"
        ) from None
    except strictjson.TooLarge:
        raise ContractsUnreadable(
            f"{path} holds more than {MAX_CONTRACTS_BYTES} bytes: not a contracts file"
        ) from None
    except UnicodeDecodeError:
        raise ContractsUnreadable(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise ContractsUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None
    contracts: list[tuple[int, Contract]] = []
    problems: list[_Item] = []
    # JSON Lines: lines end at "\n" only. splitlines() also breaks at U+2028 and other
    # separators that valid JSON text may hold inside a string.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = strictjson.loads(line)
        except strictjson.DuplicateKey as exc:
            problems.append(_Item(number, "?", problem=str(exc)))
            continue
        except ValueError as exc:
            problems.append(_Item(number, "?", problem=f"not JSON ({exc})"))
            continue
        action = data.get("action", "?") if isinstance(data, dict) else "?"
        try:
            contracts.append((number, Contract.model_validate(data)))
        except ValidationError as exc:
            problems.append(
                _Item(number, str(action), problem=f"invalid contract: {describe_error(exc)}")
            )
    return contracts, problems


async def check_contracts(
    contracts: list[tuple[int, Contract]],
    registry: SourceRegistry,
    *,
    observer: str,
    befores: Snapshot | None = None,
) -> list[_Item]:
    """Observe every contract (a few at a time); every probe runs, none is skipped. With
    ``befores``, each is judged against its before-reading there (when it has one)."""
    limit = asyncio.Semaphore(_CONCURRENCY)

    async def one(line: int, contract: Contract) -> _Item:
        # Exactly this probe: its reading is compared with this one's (observe checks it).
        entry = (
            find_before(befores, contract.probe, contract.expect, exact=True) if befores else None
        )
        async with limit:
            observation = await observe(
                contract.probe,
                contract.expect,
                registry=registry,
                observer=observer,
                before=entry.observation if entry is not None else None,
            )
        item = _Item(line, contract.action, Verdict.of(contract.action, observation))
        item.unbefored = befores is not None and entry is None
        return item

    return list(await asyncio.gather(*(one(line, c) for line, c in contracts)))


def _evidence_line(verdict: Verdict) -> str:
    evidence = verdict.observation.evidence
    if evidence is None or evidence.total_bytes == 0:
        return "the probe returned nothing"
    text = evidence.text[:_EVIDENCE_IN_REASON].replace("\n", "\\n")
    more = "..." if len(evidence.text) > _EVIDENCE_IN_REASON or evidence.truncated else ""
    return f"the probe returned {evidence.total_bytes} bytes: {text}{more}"


def _shown(text: str) -> str:
    """Contract text as the agent and a terminal see it: control characters escaped, so an
    action cannot colour the screen or forge reason lines of its own."""
    return escape_for_humans(text).replace("\n", "\\n")


def _reason(item: _Item) -> str:
    if item.problem:
        return f"line {item.line} ({_shown(item.action)}): {item.problem}"
    assert item.verdict is not None
    v = item.verdict
    return (
        f"line {item.line} ({_shown(item.action)}): {v.outcome.value} under "
        f"{_shown(v.expectation)}: {v.message} [{_evidence_line(v)}]"
    )


def _decide(items: list[_Item], *, stop_hook_active: bool, allow_empty: bool) -> GuardResult:
    items = sorted(items, key=lambda i: i.line)
    result = GuardResult(block=False, items=items)
    for item in items:
        if not item.landed:
            result.reasons.append(_reason(item))
        elif item.verdict is not None and item.verdict.weak:
            result.notes.append(f"line {item.line} ({_shown(item.action)}): passed on {WEAK_NOTE}")
        if item.unbefored:
            result.notes.append(
                f"line {item.line} ({_shown(item.action)}): no before-reading of it was taken "
                "when the prompt was submitted, so an outcome that was already there is not told "
                "apart"
            )
    if not items:
        if not allow_empty:
            return _blocked(
                "the contracts file declares no completion contract, so nothing was checked; "
                "declare what this turn must land (one JSON contract per line), or pass "
                "--allow-empty where a turn with nothing to check may end"
            )
        result.notes.append("no contracts declared: nothing to check (--allow-empty)")
    if result.reasons:
        result.block = True
        failed = len(result.reasons)
        head = f"landed guard blocked: {failed} of {len(items)} completion contract(s) did not land"
        result.reasons.insert(0, head)
        if any(i.verdict and i.verdict.outcome is Outcome.PROBE_ERROR for i in items):
            result.reasons.append(
                "a probe-error observed nothing: re-run it once the source answers"
            )
        if stop_hook_active:
            result.reasons.append(
                "this turn was already blocked by landed guard and the contracts above still do "
                "not pass; guard keeps blocking (it fails closed)"
            )
        result.reasons.append(
            "do not report these as done: make each one land and read it back, or tell the "
            "user plainly which did not land"
        )
    return result


def _blocked(reason: str) -> GuardResult:
    return GuardResult(block=True, reasons=[f"landed guard blocked: {reason}"])


@dataclass(frozen=True)
class _HookInput:
    cwd: str | None = None
    stop_hook_active: bool = False
    #: Claude Code's hook_event_name: UserPromptSubmit takes the before-readings, Stop judges.
    event: str = "Stop"
    session_id: str | None = None


def _parse_hook_input(hook: str, raw: str) -> _HookInput:
    if hook not in HOOKS:
        raise ValueError(f"unknown hook {hook!r}; use one of {', '.join(HOOKS)}")
    try:
        data = strictjson.loads(raw) if raw.strip() else None
    except strictjson.DuplicateKey as exc:
        # Two values for one key (a second "cwd", a second "session_id"): never pick one.
        raise ValueError(f"the hook input on stdin: {exc}") from exc
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ValueError(
            "the Stop hook input on stdin is not a JSON object; run guard with --hook only "
            "from the hook itself"
        )
    cwd = data.get("cwd")
    event = data.get("hook_event_name") or "Stop"
    if event not in ("Stop", "SubagentStop", "UserPromptSubmit"):
        raise ValueError(
            f"landed guard answers the Stop and UserPromptSubmit hooks, not {str(event)[:40]!r}; "
            "register it for those two events only"
        )
    session = data.get("session_id")
    return _HookInput(
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        stop_hook_active=data.get("stop_hook_active") is True,
        event=str(event),
        session_id=session if isinstance(session, str) and session else None,
    )


@dataclass(frozen=True)
class _Options:
    hook: str | None
    config_file: str | None
    deadline_s: float
    allow_empty: bool
    before_file: str | None


async def _capture(path: Path, hook_input: _HookInput, opts: _Options) -> GuardResult:
    """UserPromptSubmit: read every contract now, as this turn's before-state. It never blocks
    the prompt; a read that fails is kept as a probe-error, which no pass can be judged from."""
    done = GuardResult(block=False, captured=True)
    if hook_input.session_id is None:
        done.notes.append("the hook input names no session_id: no before-state was taken")
        return done
    try:
        contracts, _ = load_contracts(path)
        registry = load_registry(
            config_file=opts.config_file, role="landed-guard", allow_unsourced=True
        )
    except (ContractsUnreadable, ConfigError) as exc:
        done.notes.append(f"no before-state taken: {exc}")
        return done
    try:
        async with registry, asyncio.timeout(opts.deadline_s):
            snap = await take_snapshot(
                [c for _, c in contracts], registry, observer=registry.observer
            )
        write_snapshot(snap, turn_path(hook_input.session_id, path))
    except (TimeoutError, SnapshotError, OSError) as exc:
        # The Stop hook then finds no before-state of this turn, and says so.
        done.notes.append(f"no before-state taken: {type(exc).__name__}: {exc}")
        return done
    done.notes.append(f"landed guard: took the before-state of {len(snap.entries)} contract(s)")
    return done


def _befores(path: Path, hook_input: _HookInput, opts: _Options) -> Snapshot | None:
    """The before-readings to judge against: --before, else this session's turn (if taken)."""
    if opts.before_file is not None:
        return read_snapshot(Path(opts.before_file))
    if opts.hook is None or hook_input.session_id is None:
        return None
    turn = turn_path(hook_input.session_id, path)
    return read_snapshot(turn) if turn.exists() else None


async def _run(
    contracts_file: str, read_stdin: Callable[[int], str], opts: _Options
) -> GuardResult:
    hook_input = _HookInput()
    if opts.hook is not None:
        try:
            hook_input = _parse_hook_input(opts.hook, read_stdin(_MAX_HOOK_INPUT))
        except ValueError as exc:
            return _blocked(str(exc))
    path = Path(contracts_file)
    if not path.is_absolute() and hook_input.cwd is not None:
        path = Path(hook_input.cwd) / path
    if hook_input.event == "UserPromptSubmit":
        return await _capture(path, hook_input, opts)
    try:
        befores = _befores(path, hook_input, opts)
    except SnapshotError as exc:
        return _blocked(f"the before-state cannot be used: {exc}")
    try:
        contracts, problems = load_contracts(path)
    except ContractsUnreadable as exc:
        if opts.allow_empty and not path.exists():
            return _decide([], stop_hook_active=False, allow_empty=True)
        return _blocked(str(exc))
    try:
        # The guard is the user's own hook: its contracts run with the user's authority.
        registry = load_registry(
            config_file=opts.config_file, role="landed-guard", allow_unsourced=True
        )
    except ConfigError as exc:
        return _blocked(str(exc))
    async with registry:
        try:
            async with asyncio.timeout(opts.deadline_s):
                items = await check_contracts(
                    contracts, registry, observer=registry.observer, befores=befores
                )
        except TimeoutError:
            return _blocked(
                f"the contracts were not all checked within {opts.deadline_s}s; nothing "
                "unchecked counts as landed (raise --deadline, or make the probes faster)"
            )
    return _decide(
        [*items, *problems],
        stop_hook_active=hook_input.stop_hook_active,
        allow_empty=opts.allow_empty,
    )


def run_guard(
    contracts_file: str,
    *,
    hook: str | None = None,
    read_stdin: Callable[[int], str] | None = None,
    config_file: str | None = None,
    deadline_s: float = 50.0,
    allow_empty: bool = False,
    before_file: str | None = None,
) -> GuardResult:
    """Decide for the CLI and every hook. Never raises: any failure at all is a block (a
    UserPromptSubmit hook that fails only says so: it takes readings, it judges nothing)."""
    opts = _Options(hook, config_file, deadline_s, allow_empty, before_file)
    try:
        return asyncio.run(_run(contracts_file, read_stdin or (lambda n: ""), opts))
    except BaseException as exc:  # fail closed: a guard that cannot finish has checked nothing
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return _blocked(f"guard itself failed ({detail}); a check that did not run is not a pass")
