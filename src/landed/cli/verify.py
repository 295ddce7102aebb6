"""``landed verify``: run one probe now and say what it returned and whether that is the claim."""

from __future__ import annotations

import asyncio
import math
import os
import shlex
from pathlib import Path
from typing import Any, NoReturn

import typer

from landed.cli.out import fail
from landed.cli.root import app
from landed.probes.coerce import coerce_expectation, coerce_probe
from landed.probes.contract import Observation, Outcome
from landed.probes.expect import label_for
from landed.probes.observe import DEFAULT_EVIDENCE_CAP, observe
from landed.probes.settings import ConfigError
from landed.probes.snapshot import SnapshotError, find_before, read_snapshot
from landed.probes.sources import SourceRegistry, load_registry
from landed.probes.verdict import InvalidContract, Verdict, report_lines
from landed.util import strictjson

EXIT_LANDED = 0
EXIT_NOT_LANDED = 1
EXIT_PROBE_FAILED = 3

_SHELL_TOKENS = {"|", "||", "&&", ";", ">", ">>", "<", "&", "2>", "2>&1", "<<"}

_HELP = """Run one probe now and judge what it returned against one expectation.

Give exactly one probe: --probe "CMD" (a command), --http URL, or --sql SOURCE "QUERY".
Give at most one expectation: --count N, --at-least N, --change +N, --contains S, --regex
P, --equals V, --json-path P=V (also P>=V, P!=V, ...), --rung-at-least R. With none, the
weak default non_empty applies: any non-empty output passes, and the verdict says so.

--count, --at-least and --equals judge the value the probe returns now (--count 45: 45
exist). --change +45 (or --change=-3) judges after minus before, and needs --before FILE, a
snapshot taken before the action with landed snapshot; without one it is not done. With
--before, an outcome that was already there before the action is vacuous (exit 1).

--probe "CMD" is split into argv with POSIX shell-like quoting (shlex.split) and run with
no shell: pipes, redirections and $VARS reach the program as plain arguments. Add --shell
to run the string with /bin/sh -c. The command gets a scrubbed environment (PATH, HOME,
locale); pass a variable through with --env NAME (its value is redacted from the output).

The limit, stated plainly: a probe can only be as independent as the command you give it.
landed runs the command and reports what the probe returned; it cannot prove the command
did any I/O against the system of record. `--probe "echo 45" --count 45` passes. Point the
probe at the system where the result lives, ideally with a different client and
credentials than the action used.

The raw output the probe returned is always printed as evidence (capped; control and
ANSI escape characters are shown escaped; configured secrets are redacted).

Exit codes: 0 pass (the probe returned what the expectation asks); 1 empty, mismatch,
vacuous or duplicated; 2 usage
error; 3 the probe failed and observed nothing (error, timeout, refused), or the input or
configuration is invalid."""


def _json_or_text(raw: str, flag: str) -> Any:
    """A flag's value as JSON, or as the text itself when it is not JSON (unquoted text
    compares as a string). JSON that gives a key twice is refused, never half-read."""
    try:
        return strictjson.loads(raw)
    except strictjson.DuplicateKey as exc:
        raise InvalidContract(f"{flag}: {exc}") from exc
    except ValueError:
        return raw


def _parse_json_path(text: str) -> dict[str, Any]:
    for op in ("==", "!=", ">=", "<=", ">", "<", "="):
        path, sep, raw = text.partition(op)
        if sep and path.strip():
            value = _json_or_text(raw, "--json-path")
            return {
                "type": "json_path",
                "path": path.strip(),
                "op": "==" if op == "=" else op,
                "value": value,
            }
    raise InvalidContract(f"--json-path needs PATH=VALUE (or ==, !=, >=, <=, >, <), got {text!r}")


def _change(text: str) -> dict[str, Any]:
    try:
        value = int(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"--change needs a signed whole number such as +45 or -3, got {text!r}"
        ) from None
    return {"type": "change", "value": value}


def _expectation(
    *,
    change: str | None = None,
    count: int | None,
    at_least: float | None,
    contains: str | None,
    regex: str | None,
    equals: str | None,
    json_path: str | None,
    rung: str | None,
) -> dict[str, Any]:
    given: list[dict[str, Any]] = []
    if change is not None:
        given.append(_change(change))
    if count is not None:
        given.append({"type": "count", "value": count})
    if at_least is not None:
        if not math.isfinite(at_least):
            raise typer.BadParameter(
                f"--at-least needs a finite number, got {at_least}; give the least count "
                "that must be seen, such as --at-least 45"
            )
        value: int | float = int(at_least) if at_least == int(at_least) else at_least
        given.append({"type": "at_least", "value": value})
    if contains is not None:
        given.append({"type": "contains", "value": contains})
    if regex is not None:
        given.append({"type": "regex", "value": regex})
    if equals is not None:
        given.append({"type": "equals", "value": _json_or_text(equals, "--equals")})
    if json_path is not None:
        given.append(_parse_json_path(json_path))
    if rung is not None:
        given.append({"type": "rung_at_least", "value": rung})
    if len(given) > 1:
        raise typer.BadParameter("give at most one expectation flag")
    return given[0] if given else {"type": "non_empty"}


def _command_probe(
    cmd: str, *, shell: bool, env_names: list[str], timeout: float, source: str | None
) -> tuple[dict[str, Any], list[str]]:
    """The command probe --probe asks for, and the values of the --env variables it passes."""
    env: dict[str, str] = {}
    for name in env_names:
        if name not in os.environ:
            raise InvalidContract(f"--env {name}: no such variable in your environment")
        env[name] = os.environ[name]
    if shell:
        argv = [cmd]
    else:
        try:
            argv = shlex.split(cmd)
        except ValueError as exc:
            raise InvalidContract(f"--probe could not be split into arguments: {exc}") from None
        if not argv:
            raise InvalidContract("--probe is empty; give the command that reads the result back")
        odd = [t for t in argv if t in _SHELL_TOKENS]
        if odd:
            typer.echo(
                f"note: {' '.join(sorted(set(odd)))} reach the program as arguments: no shell "
                "runs without --shell",
                err=True,
            )
    probe = {"kind": "command", "argv": argv, "shell": shell, "env": env, "timeout_s": timeout}
    if source:
        probe["source"] = source
    return probe, list(env.values())


def _read_probe(
    http: str | None, sql: tuple[str, str] | None, source: str | None, status: int, timeout: float
) -> dict[str, Any]:
    """The probe --http or --sql asks for."""
    if http:
        return {
            "kind": "http",
            "url": http,
            "source": source,
            "status": status,
            "timeout_s": timeout,
        }
    assert sql is not None
    return {
        "kind": "record",
        "source": sql[0],
        "query": sql[1],
        "timeout_s": timeout,
    }


async def _observe_once(
    registry: SourceRegistry,
    probe: Any,
    expect: Any,
    evidence_cap: int,
    action: str,
    before: Observation | None = None,
) -> Verdict:
    async with registry:
        observation = await observe(
            probe,
            expect,
            registry=registry,
            observer=registry.observer,
            evidence_cap=evidence_cap,
            before=before,
        )
    return Verdict.of(action, observation)


def _before_of(path: str | None, probe: Any, expect: Any) -> tuple[Any, Observation | None]:
    """The snapshot's probe (its own timeout) and its before-reading under ``expect``; the
    probe as given and no before-reading without --before."""
    if path is None:
        return probe, None
    try:
        snap = read_snapshot(Path(path))
    except SnapshotError as exc:
        raise InvalidContract(f"--before: {exc}") from None
    entry = find_before(snap, probe, expect)
    if entry is None:
        taken = ", ".join(sorted({e.observation.expectation for e in snap.entries})) or "none"
        raise InvalidContract(
            f"--before: {path} holds no before-reading of this probe under "
            f"{label_for(probe, expect)} (it holds {taken}); snapshot a contract with this same "
            "probe and expectation before the action"
        )
    return entry.contract.probe, entry.observation


def _report(verdict: Verdict, *, as_json: bool) -> NoReturn:
    """Print the verdict and exit with its code."""
    if as_json:
        typer.echo(verdict.model_dump_json(indent=2))
    else:
        _print_human(verdict)
    if verdict.landed:
        raise typer.Exit(EXIT_LANDED)
    raise typer.Exit(
        EXIT_PROBE_FAILED if verdict.outcome is Outcome.PROBE_ERROR else EXIT_NOT_LANDED
    )


def _print_human(verdict: Verdict) -> None:
    typer.echo("\n".join(report_lines(verdict)))


def _paragraphs(text: str) -> str:
    """Hard-wrapped source text as paragraphs, so the help reflows to the terminal's width."""
    return "\n\n".join(" ".join(part.split()) for part in text.split("\n\n"))


@app.command("verify", help=_paragraphs(_HELP))
def verify_command(
    probe_cmd: str | None = typer.Option(
        None, "--probe", help="Command that reads the result back."
    ),
    http: str | None = typer.Option(None, "--http", help="URL to GET (or a path with --source)."),
    sql: tuple[str, str] | None = typer.Option(
        None, "--sql", help="SOURCE QUERY: a SQL query on a configured source.", show_default=False
    ),
    shell: bool = typer.Option(False, "--shell", help="Run --probe with /bin/sh -c."),
    count: int | None = typer.Option(
        None, "--count", help="Exactly N (a number above N is duplicated)."
    ),
    at_least: float | None = typer.Option(None, "--at-least", help="At least N."),
    change: str | None = typer.Option(
        None, "--change", help="After minus before is exactly this (+45, -3); needs --before."
    ),
    before: str | None = typer.Option(
        None, "--before", help="Snapshot (landed snapshot) to judge against."
    ),
    contains: str | None = typer.Option(None, "--contains", help="Output contains S."),
    regex: str | None = typer.Option(None, "--regex", help="Output matches P (search)."),
    equals: str | None = typer.Option(None, "--equals", help="Output equals V (JSON or text)."),
    json_path: str | None = typer.Option(None, "--json-path", help="PATH=VALUE on JSON output."),
    rung: str | None = typer.Option(None, "--rung-at-least", help="Status at least this rung."),
    source: str | None = typer.Option(
        None, "--source", help="Named source (http base, command env)."
    ),
    status: int = typer.Option(200, "--status", help="Expected HTTP status for --http."),
    env_names: list[str] = typer.Option([], "--env", help="Pass this variable to the command."),
    timeout: float = typer.Option(
        30.0, "--timeout", help="Seconds before the probe is a probe-error."
    ),
    action: str = typer.Option("the claimed action", "--action", help="What was claimed done."),
    config: str | None = typer.Option(None, "--config", help="landed.toml with the sources."),
    evidence_cap: int = typer.Option(
        DEFAULT_EVIDENCE_CAP, "--evidence-cap", help="Evidence bytes kept."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
) -> None:
    sql_pair = sql if sql and all(part is not None for part in sql) else None
    try:
        if len([p for p in (probe_cmd, http, sql_pair) if p]) != 1:
            raise typer.BadParameter("give exactly one of --probe, --http or --sql")
        expect = _expectation(
            change=change,
            count=count,
            at_least=at_least,
            contains=contains,
            regex=regex,
            equals=equals,
            json_path=json_path,
            rung=rung,
        )
    except InvalidContract as exc:  # an expectation flag that does not parse (--json-path)
        raise fail(
            str(exc), EXIT_PROBE_FAILED, json_error="invalid probe" if as_json else None
        ) from None
    try:
        if probe_cmd:
            probe, secrets = _command_probe(
                probe_cmd, shell=shell, env_names=env_names, timeout=timeout, source=source
            )
        else:
            probe, secrets = _read_probe(http, sql_pair, source, status, timeout), []
        probe_model, expect_model = coerce_probe(probe), coerce_expectation(expect)
        probe_model, prior = _before_of(before, probe_model, expect_model)
        # The CLI runs with the user's own authority (they configure it), so probes without a
        # source (a local command, an absolute URL) stay allowed here; the verifier worker, which
        # runs probes a task supplies, reads only what its configuration allows.
        registry = load_registry(
            config_file=config, role="landed-cli", extra_secrets=secrets, allow_unsourced=True
        )
    except (InvalidContract, ConfigError) as exc:
        what = "invalid probe" if isinstance(exc, InvalidContract) else "configuration"
        raise fail(str(exc), EXIT_PROBE_FAILED, json_error=what if as_json else None) from None
    verdict = asyncio.run(
        _observe_once(registry, probe_model, expect_model, evidence_cap, action, prior)
    )
    _report(verdict, as_json=as_json)
