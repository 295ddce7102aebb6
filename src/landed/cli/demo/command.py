"""``landed demo``: six honest scenarios run as real AgentTask workflows on ``landed dev``, then
the governance scenarios (approval, a loop's tripwire, a paused fleet) and a claim stream."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final
from urllib.parse import parse_qs, urlsplit

import httpx
import typer
from rich.markup import escape
from rich.table import Table

# The approval scenario (GOV-5): its act is imported here so the demo's actor registers it.
from landed.cli.demo.approval import (
    approval_row,
    make_approver,
    make_outbox,
    send_invoice,
    sent_count,
)
from landed.cli.demo.approval import start_approval as _start_approval
from landed.cli.out import fail
from landed.cli.report_console import ReportConsole
from landed.cli.root import app
from landed.cli.signals import stop_requested
from landed.receipts.model import Cost, Receipt
from landed.task.acts import ActContext, act
from landed.task.messages import ActReport

if TYPE_CHECKING:
    from landed.telemetry.exporter import Exporter

__all__ = ["SCENARIOS", "Scenario", "demo", "send_invoice"]

ACTS_MODULE: Final = "landed.cli.demo.command"


# --- the demo agent's acts (run by the actor process, which imports this module) -------------


def _shop(ctx: ActContext) -> str:
    return ctx.credential("shop-db").removeprefix("sqlite:///")


def _insert(ctx: ActContext, batch: str, n: int) -> None:
    with sqlite3.connect(_shop(ctx), timeout=30) as conn:
        conn.executemany(
            "insert into orders (batch, line, idempotency_key) values (?, ?, ?)",
            [(batch, i, ctx.idempotency_key) for i in range(n)],
        )


@act("demo.insert_orders")
def insert_orders(spec: dict[str, Any], ctx: ActContext) -> ActReport:
    """Insert order lines. ``land`` of ``claim`` lines really land; ``swallow`` hides an error."""
    batch, land, claim = str(spec["batch"]), int(spec["land"]), int(spec["claim"])
    if spec.get("swallow"):
        try:
            with sqlite3.connect(_shop(ctx), timeout=30) as conn:
                conn.execute("insert into order_lines_v2 (batch) values (?)", [batch])
        except sqlite3.Error:
            pass  # the agent swallowed "no such table" and carried on
    else:
        _insert(ctx, batch, land)
    return ActReport(
        claimed_status="done",
        report=str(spec.get("report") or f"Inserted {claim} rows. Done."),
        exit_code=0,
        cost=Cost(input_tokens=1200, output_tokens=80, usd=0.004),
    )


@act("demo.publish")
def publish(spec: dict[str, Any], ctx: ActContext) -> ActReport:
    """POST a post to the site; an HTTP error raises, so the write's outcome is unknown."""
    resp = httpx.post(
        ctx.credential("site") + "/posts",
        json={"slug": spec["slug"], "title": spec["title"]},
        headers={"Idempotency-Key": ctx.idempotency_key},
        timeout=10,
    )
    if resp.status_code >= 400:
        raise RuntimeError(f"publish API answered HTTP {resp.status_code}")
    return ActReport(claimed_status="done", report=f"Published {spec['slug']}.", exit_code=0)


# --- the local system of record ---------------------------------------------------------------


class _Site:
    """A tiny publishing site: it saves each post, and answers the first one with HTTP 500."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.fail_next = 1
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: str) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                slug = parse_qs(parts.query).get("slug", [""])[0]
                if parts.path != "/posts/count":
                    self._send(404, "not found")
                    return
                self._send(200, str(site.count(slug)))

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with site.lock:
                    site.posts.append(body)  # saved first ...
                    fail, site.fail_next = site.fail_next > 0, max(0, site.fail_next - 1)
                self._send(500 if fail else 201, "error" if fail else "created")  # ... then 500

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def count(self, slug: str) -> int:
        with self.lock:
            return sum(1 for p in self.posts if p.get("slug") == slug)

    @contextmanager
    def running(self) -> Iterator[_Site]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()


def _make_shop(path: Path, batch_already_there: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("pragma journal_mode=wal")
        conn.execute(
            "create table if not exists orders (batch text, line integer, idempotency_key text)"
        )
        conn.executemany(
            "insert into orders (batch, line, idempotency_key) values (?, ?, 'loaded-earlier')",
            [(batch_already_there, i) for i in range(45)],
        )


# --- the six scenarios --------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    key: str
    story: str
    expected: str  # the verdict this scenario must get
    read_back: str  # the read-back outcome it must show


SCENARIOS: Final = (
    Scenario("rows-land", "45 order lines inserted and really there", "verified", "pass"),
    Scenario("swallowed", "insert error swallowed, 'Inserted 45 rows. Done.'", "planned", "empty"),
    Scenario("half-migration", "migration moved 22 of 45 lines", "planned", "mismatch"),
    Scenario("already-there", "the 45 lines were there before the act", "planned", "vacuous"),
    Scenario("publish-500", "publish saved, then answered HTTP 500", "verified", "pass"),
    Scenario("blocked", "lines landed, but the report says blocked", "executed", "pass"),
)


def _count_rows(batch: str) -> dict[str, Any]:
    return {
        "action": "insert 45 order lines",
        "probe": {
            "kind": "record",
            "source": "shop-db",
            "query": "select count(*) from orders where batch = ?",
            "params": [batch],
        },
        "expect": {"type": "count", "value": 45},
    }


def _tasks(run: str) -> dict[str, dict[str, Any]]:
    def rows(key: str, batch: str, **act_input: Any) -> dict[str, Any]:
        return {
            "task_id": f"demo-{key}-{run}",
            "owner": "demo-agent",
            "outcome": f"45 order lines of batch {batch} are in the orders table",
            "target": "shop-db: orders",
            "act": {
                "name": "demo.insert_orders",
                "input": {"batch": batch, "claim": 45, **act_input},
            },
            "proof_plan": [_count_rows(batch)],
            "business_outcome_class": "order_lines",
        }

    slug = f"spring-pricing-{run}"
    return {
        "rows-land": rows("rows-land", f"a-{run}", land=45),
        "swallowed": rows("swallowed", f"b-{run}", land=0, swallow=True),
        "half-migration": rows("half-migration", f"c-{run}", land=22),
        "already-there": rows("already-there", f"d-{run}", land=0),
        "publish-500": {
            "task_id": f"demo-publish-500-{run}",
            "owner": "demo-agent",
            "outcome": "one copy of the spring pricing post is on the site",
            "target": f"site: /posts/{slug}",
            "act": {"name": "demo.publish", "input": {"slug": slug, "title": "Spring pricing"}},
            "proof_plan": [
                {
                    "action": "publish one post",
                    "probe": {"kind": "http", "source": "site", "url": f"/posts/count?slug={slug}"},
                    "expect": {"type": "count", "value": 1},
                }
            ],
        },
        "blocked": rows(
            "blocked",
            f"e-{run}",
            land=45,
            report="Inserted the lines, but the invoice sync is blocked on finance's approval.",
        ),
    }


async def _in_ledger(url: str, receipts: list[Receipt]) -> list[bool]:
    """Each receipt read back from the ledger, as stored: the demo holds itself to the rule."""
    from landed.ledger.base import canonical_json
    from landed.ledger.factory import open_ledger

    ledger = await open_ledger(url, create=False)
    try:
        found = []
        for receipt in receipts:
            stored = await ledger.latest(receipt.task_id)
            found.append(stored is not None and canonical_json(stored) == canonical_json(receipt))
        return found
    finally:
        await ledger.close()


def _scenario_rows(
    receipts: list[Receipt], stored: list[bool], copies_of_post: int
) -> list[dict[str, Any]]:
    """One row per scenario: its verdict and read-back against what it must get."""
    rows: list[dict[str, Any]] = []
    for scenario, receipt, in_ledger in zip(SCENARIOS, receipts, stored, strict=True):
        backs = [p for p in receipt.proof if p.landed and "observation" in p.landed]
        read_back = backs[0].result if backs else "none"
        ok = receipt.verdict == scenario.expected and read_back == scenario.read_back
        ok = ok and in_ledger
        if scenario.key == "publish-500":
            ok = ok and copies_of_post == 1
        landed = receipt.landed
        act_error = getattr(landed, "act_error", None)
        rows.append(
            {
                "scenario": scenario.key,
                "story": scenario.story,
                "task_id": receipt.task_id,
                "claimed": "(no answer)" if act_error else receipt.claimed_status,
                "read_back": read_back,
                "verdict": receipt.verdict,
                "done": receipt.done,
                "proof_level": getattr(landed, "proof_level", None),
                "expected": scenario.expected,
                "in_ledger": in_ledger,
                "ok": ok,
                "findings": list(getattr(landed, "findings", []) or []),
            }
        )
    return rows


async def _governance_rows(
    client: Any, approving: asyncio.Future[Any], shop: Path, run: str, ledger_url: str
) -> list[dict[str, Any]]:
    """The governance scenarios, a row each: approval (GOV-5), a loop's tripwire (GOV-9) and
    the fleet's pause (GOV-4)."""
    from landed.cli.demo.loop import run_loop_scenario
    from landed.cli.demo.pause import pause_row

    approved, held = await approving
    (approved_in_ledger,) = await _in_ledger(ledger_url, [approved])
    rows = [approval_row(approved, held, approved_in_ledger, sent_count(shop, run))]
    # GOV-9: the loop scenario (landed.cli.demo.loop), a row of its own.
    rows.append(await run_loop_scenario(client, run, ledger_url))
    # --- fleet: the pause scenario (GOV-4) ---
    rows.append(await pause_row(client, shop, run, ledger_url))
    return rows


async def _run_demo(
    home: Path, show: Callable[[list[dict[str, Any]], dict[str, Any], float], None], keep: bool
) -> list[dict[str, Any]]:
    from landed.dev.stack import DevStack
    from landed.telemetry.exporter import serve_beside

    run = time.strftime("%H%M%S") + "-" + uuid.uuid4().hex[:4]
    home.mkdir(parents=True, exist_ok=True)
    # The shop in a directory of its own: the actor may write there, never beside the keys
    # and the ledger in home (landed.util.confine_policy).
    (home / "shop").mkdir(exist_ok=True)
    shop = (home / "shop" / "shop.db").resolve()
    _make_shop(shop, f"d-{run}")
    make_outbox(shop)
    approver_key = make_approver(home)  # before the stack: its runner trusts home/approvers
    site = _Site()
    from landed.cli.demo.reconcile import write_contracts

    contracts = write_contracts(home)  # the runner judges the claim stream by these
    with site.running():
        stack = DevStack(
            home=home,
            env={
                "runner": {"LANDED_RUNNER_CLAIM_CONTRACTS": str(contracts.resolve())},
                "actor": {
                    "LANDED_ACTOR_ACTS": ACTS_MODULE,
                    "LANDED_ACTOR_CREDENTIALS": json.dumps(
                        {"shop-db": f"sqlite:///{shop}", "site": site.url}
                    ),
                },
                "verifier": {
                    "LANDED_SOURCES__SHOP_DB__URL": f"sqlite:///{shop}",
                    "LANDED_SOURCES__SITE__URL": site.url,
                },
            },
        )
        started = time.monotonic()
        exporter: Exporter | None = None
        await stack.start()
        try:
            info = stack.addresses()
            client = await stack.client()
            tasks = _tasks(run)
            approving = asyncio.ensure_future(_start_approval(client, run, approver_key))
            receipts: list[Receipt] = await asyncio.gather(
                *(client.run(tasks[s.key]) for s in SCENARIOS)
            )
            # The runner reports its ledger without credentials; open the one it was given.
            ledger_url = stack.role_environment("runner")["LANDED_RUNNER_LEDGER_URL"]
            stored = await _in_ledger(ledger_url, receipts)
            rows = _scenario_rows(receipts, stored, site.count(f"spring-pricing-{run}"))
            rows += await _governance_rows(client, approving, shop, run, ledger_url)
            info["copies_of_post"] = site.count(f"spring-pricing-{run}")
            # The claim-stream scenario (landed.cli.demo.reconcile): landed reconcile on a JSONL.
            from landed.cli.demo.reconcile import claim_stream

            claims = await claim_stream(client.temporal, home, shop, run)
            info["claim_stream"] = claims
            elapsed = time.monotonic() - started
            # The scorecard of what just settled, from the ledger (a free port: printed).
            exporter = await serve_beside(ledger_url, info["web_ui"], 0)
            info["exporter"] = exporter.url
            show(rows, info, elapsed)
            if keep:
                with stop_requested() as stop:
                    await stop.wait()
            rows = rows + claims  # the exit code holds the claim stream to its verdicts too
        finally:
            if exporter is not None:
                await exporter.stop()
            await asyncio.to_thread(stack.stop)
    return rows


@app.command("demo")
def demo(
    home: Annotated[
        Path, typer.Option("--dir", help="Where the demo's Temporal db, ledger and shop live.")
    ] = Path(".landed/demo"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    keep: Annotated[
        bool,
        typer.Option(
            "--keep", help="Keep the dev server and workers up after the table (Ctrl-C stops)."
        ),
    ] = False,
) -> None:
    """Run six honest scenarios as real AgentTask workflows on `landed dev` (Temporal's dev
    server + actor, verifier and runner processes) against a local SQLite shop and HTTP site,
    then approval, a loop's tripwire and a paused fleet, and a claim stream (landed reconcile);
    read each receipt back from the ledger, print the verdict table, the ledger path and the
    Web UI address, then stop everything (with --keep: once you press Ctrl-C).

    Exit codes: 0 every scenario got its expected verdict and its receipt is in the ledger;
    1 one did not; 3 could not start.
    """
    from landed.dev.server import DevError

    def show(rows: list[dict[str, Any]], info: dict[str, Any], elapsed: float) -> None:
        claims = info.pop("claim_stream", [])
        if as_json:
            print(
                json.dumps(
                    {
                        "scenarios": rows,
                        "addresses": info,
                        "seconds": elapsed,
                        "claim_stream": claims,
                    },
                    indent=2,
                )
            )
        else:
            _print_table(rows, info, elapsed, keep)
            from landed.cli.demo.reconcile import print_claims

            print_claims(ReportConsole(), claims)
        sys.stdout.flush()

    try:
        rows = asyncio.run(_run_demo(home, show, keep))
    except DevError as exc:
        raise fail(f"landed demo: {exc}", 3, json_error="start" if as_json else None) from None
    except OSError as exc:  # --dir cannot hold what the demo writes (a file there, no access)
        raise fail(
            f"landed demo: could not start: {exc}; check --dir {home}",
            3,
            json_error="start" if as_json else None,
        ) from None
    raise typer.Exit(1 if any(not r["ok"] for r in rows) else 0)


def _verdict_cell(row: dict[str, Any]) -> str:
    """The verdict and its proof level, after DONE or NOT DONE where the row is about tasks."""
    verdict = f"{row['verdict']} ({row['proof_level']})"
    if row.get("done") is None:  # the loop's row: a tripwire's state, not one task's verdict
        return verdict
    return ("[green]DONE[/] " if row["done"] else "[yellow]NOT DONE[/] ") + verdict


def _print_table(
    rows: list[dict[str, Any]], info: dict[str, Any], elapsed: float, keep: bool
) -> None:
    failed = [r for r in rows if not r["ok"]]
    # Paths and addresses are text: "[x]" in one is not markup, ":rocket:" not an emoji.
    console = ReportConsole()
    table = Table(title=f"landed demo: {len(rows)} agent tasks, each read back by the verifier")
    for column in ("scenario", "agent claimed", "read-back", "verdict", "expected", ""):
        table.add_column(column)
    for r in rows:
        mark = "[green]ok[/]" if r["ok"] else "[bold red]WRONG[/]"
        if not r["in_ledger"]:
            mark = "[bold red]NOT IN LEDGER[/]"
        table.add_row(
            f"{r['scenario']}\n[dim]{r['story']}[/]",
            r["claimed"],
            r["read_back"],
            _verdict_cell(r),
            r["expected"],
            mark,
        )
    console.print(table)
    console.print(f"copies of the post after the HTTP 500: {info['copies_of_post']} (DOD-10)")
    stored = sum(1 for r in rows if r["in_ledger"])
    console.print(
        f"ledger   {escape(info['ledger'])}  ({stored}/{len(rows)} receipts read back from "
        f"it; landed board --ledger {escape(info['ledger'])})",
        highlight=False,
    )
    state = "Ctrl-C stops it" if keep else "stopped with the demo; --keep keeps it up"
    console.print(f"web UI   {escape(str(info['web_ui']))} ({state})", highlight=False)
    console.print(f"temporal {info['temporal']}, db {escape(str(info['db']))}", highlight=False)
    console.print(f"scorecard {info['exporter']} (metrics: {info['exporter']}metrics; {state})")
    console.print(f"{len(rows) - len(failed)}/{len(rows)} as expected in {elapsed:.1f}s")
