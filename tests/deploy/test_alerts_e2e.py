"""landed's alerts and dashboards on real parts: Prometheus scrapes landed exporter and the
roles' metrics pages while a small fleet runs on the dev server; the proof rate drops, the
alert reaches a webhook through Alertmanager, the fleet recovers and the alert resolves; then
every dashboard panel returns data."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.exporter import Place, exporter_on
from helpers.grafana import BOARDS, ROOT, panel_queries, substitute
from helpers.prom import Prometheus, alertmanager, fast_rules, prometheus
from helpers.roles import Roles, rows_roles
from helpers.sor import make_rows_db, rows_task
from helpers.wait import until
from helpers.webhook import Webhook, webhook

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(400),
]

RULES = ROOT / "deploy" / "prometheus" / "landed-rules.yml"
# The 6x burn of the proof-rate SLO: with every window at 20 s, its 30% error ratio is what a
# few failing tasks among a few landing ones reach (14.4x would need 72% in a window).
ALERT = "LandedProofRateBurn6h"
MIN_EVENTS = 3  # of the shipped 10: this test settles a handful of tasks per window
# Bounds on a loaded 2-core machine: scrape and evaluation every 1 s, for: 2 s, windows 20 s.
FIRE_WITHIN_S = 90.0
RESOLVE_WITHIN_S = 150.0


@dataclass
class Fleet:
    roles: Roles
    alerting: Prometheus  # the rules rendered with short windows, sending to Alertmanager
    board: Prometheus  # the rules as shipped, as a Grafana would read them
    hook: Webhook
    task: Callable[[bool], dict[str, Any]]

    async def run(self, landing: bool, count: int) -> list[str]:
        receipts = await asyncio.gather(
            *(self.roles.client.run(self.task(landing)) for _ in range(count))
        )
        return [r.verdict for r in receipts]

    async def value(self, prom: Prometheus, expr: str) -> float | None:
        found = await asyncio.to_thread(prom.query, expr)
        return float(found[0]["value"][1]) if found else None


@asynccontextmanager
async def fleet(temporal_dev: str, tmp_path: Path) -> AsyncIterator[Fleet]:
    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    numbers = itertools.count()

    def task(landing: bool) -> dict[str, Any]:
        """A task whose act lands (writes the 2 rows it claims) or does not (writes 1 of 3)."""
        n = next(numbers)
        name = f"alerts-e2e-{'good' if landing else 'short'}-{tag}-{n}"
        if landing:
            return rows_task(name, db, expect=2, batch=f"g{tag}{n}", write=2)
        return rows_task(name, db, expect=3, batch=f"s{tag}{n}", write=1)

    rules = fast_rules(RULES, tmp_path / "fast-rules.yml")
    rules.write_text(rules.read_text().replace(">= 10", f">= {MIN_EVENTS}"))
    async with AsyncExitStack() as stack:
        # The runner as `landed dev` runs it (shared sandbox, cached workflows): this test is
        # about what Prometheus sees, and on a loaded machine a replay of every workflow task
        # under the strict sandbox, beside two Prometheus scraping this process, can outlast a
        # workflow task's timeout.
        roles = await stack.enter_async_context(
            rows_roles(
                temporal_dev, tmp_path, db, metrics=True, sandbox="shared", max_cached_workflows=100
            )
        )
        # Claims are counted at once: each names its task's owner (the Loops panel asks by
        # owner), so one read mid-act still counts under agent-a.
        exporter = exporter_on(Place(roles.ledger_url, "sqlite"), claim_lag_seconds=0)
        url = await exporter.start()
        stack.push_async_callback(exporter.stop)
        targets = [url.removeprefix("http://").rstrip("/"), *roles.metrics.values()]
        hook = stack.enter_context(webhook())
        am = stack.enter_context(alertmanager(tmp_path, hook.url))
        alerting = stack.enter_context(
            prometheus(tmp_path, scrape=targets, rule_files=[rules], alertmanager_url=am.url)
        )
        board = stack.enter_context(
            prometheus(tmp_path, scrape=targets, rule_files=[RULES], interval="5s")
        )
        await until("every target scraped", lambda: asyncio.to_thread(alerting.targets_up))
        yield Fleet(roles, alerting, board, hook, task)


async def test_the_proof_rate_alert_fires_and_resolves_through_alertmanager(
    temporal_dev: str, tmp_path: Path
) -> None:
    async with fleet(temporal_dev, tmp_path) as f:
        # A counter's first sample is its start, not an increase: the owner's series must exist
        # (as in any fleet that has run before) before rate() can see the tasks below.
        assert await f.run(True, 1) == ["verified"]
        claimed = "landed_done_claimed_total"
        await until(f"{claimed} scraped", lambda: f.value(f.alerting, claimed), timeout=30)
        assert await f.run(True, 3) == ["verified"] * 3
        proof_rate = "landed:proof_rate:ratio_rate1h"

        seen: list[float | None] = []

        async def rate_is(want: float) -> bool:
            seen.append(await f.value(f.alerting, proof_rate))
            return seen[-1] == want

        try:
            await until("the proof rate at 1", lambda: rate_is(1.0), timeout=60)
        except AssertionError as exc:
            raw = await asyncio.to_thread(f.alerting.query, '{__name__=~"landed_done.*"}')
            raise AssertionError(f"{exc}; proof rate seen {seen[-5:]}; {raw}") from None
        assert f.hook.statuses(ALERT) == []

        # Tasks whose act does not land: done claimed, not proven.
        dropped = time.monotonic()
        assert await f.run(False, 3) == ["planned"] * 3
        await until(
            f"{ALERT} firing at the webhook",
            lambda: "firing" in f.hook.statuses(ALERT),
            timeout=FIRE_WITHIN_S,
            every=0.2,
        )
        fired_after = time.monotonic() - dropped
        # The dip as Prometheus recorded it since the drop, in the owner's error ratio the
        # scorecard's SLO panels show: a value read at one instant can miss it. (Read from
        # landed:proof_rate:ratio_rate1h instead, the lowest recorded since the drop was 1.0
        # on both tries of one loaded fresh-clone run, while this ratio paged: not explained.)
        since = math.ceil(time.monotonic() - dropped) + 5
        errors = 'landed:slo_errors:ratio_rate30m{slo="proof-rate"}'
        highest = await f.value(f.alerting, f"max_over_time({errors}[{since}s])")
        lowest = await f.value(f.alerting, f"min_over_time({proof_rate}[{since}s])")
        assert highest is not None and highest > 0.3, (highest, lowest)

        # The fleet recovers: landing tasks keep coming until the alert resolves.
        recovered = asyncio.Event()

        async def landing_tasks() -> None:
            # Each batch runs to its end: a workflow cancelled mid-step is another test.
            while not recovered.is_set():
                await f.run(True, 2)

        recovering = time.monotonic()
        recovery = asyncio.create_task(landing_tasks())
        try:
            await until(
                f"{ALERT} resolved at the webhook",
                lambda: "resolved" in f.hook.statuses(ALERT),
                timeout=RESOLVE_WITHIN_S,
                every=0.2,
            )
            # Resolved because proofs came back under the burn (an error ratio of 30% at most),
            # not because the window emptied (an empty window records nothing: None here).
            resolved_after = time.monotonic() - recovering
            back = await f.value(f.alerting, proof_rate)
            assert back is not None and back >= 0.7
        finally:
            recovered.set()
            await recovery
        assert f.hook.statuses(ALERT)[0] == "firing"
        print(
            f"{ALERT}: firing at the webhook {fired_after:.1f} s after the drop, resolved "
            f"{resolved_after:.1f} s after tasks landed again; since the drop, error ratio up "
            f"to {highest}, proof rate down to {lowest}"
        )

        await check_every_panel_has_data(f)


async def check_every_panel_has_data(f: Fleet) -> None:
    """Every panel's PromQL, as Grafana would send it for owner agent-a, returns samples and
    none of them NaN, on the Prometheus that evaluates the rules as shipped."""
    queries = [q for path in BOARDS for q in panel_queries(path)]

    async def empty_or_nan() -> list[str]:
        bad = []
        for title, expr in queries:
            found = await asyncio.to_thread(f.board.query, substitute(expr, {"owner": "agent-a"}))
            values = [float(s["value"][1]) for s in found]
            if not values or any(math.isnan(v) for v in values):
                bad.append(f"{title}: {expr} -> {values}")
        return bad

    missing: list[str] = []

    async def all_have_data() -> bool:
        missing[:] = await empty_or_nan()
        return not missing

    try:
        await until("every panel has data", all_have_data, timeout=30, every=1)
    except AssertionError:
        raise AssertionError("panels without data:\n" + "\n".join(missing)) from None
