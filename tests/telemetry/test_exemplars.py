"""Exemplars from a metric to its task: the exporter's probe-duration histogram and the runner's
task-duration histogram carry the trace id of an observation, served as OpenMetrics when asked;
a real Prometheus with exemplar storage scrapes both and gives the trace id back."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from helpers.exporter import Place, exporter_on
from helpers.prom import free_port, prometheus
from helpers.scorecard import settled
from helpers.wait import until

from landed.ledger.factory import open_ledger
from landed.telemetry.task_metrics import observe_task
from landed.telemetry.worker_metrics import WorkerMetrics

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

PROBE_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TASK_TRACE = "0af7651916cd43dd8448eb211c80319c"
OM = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"


async def _ledger_with_a_traced_reading(path: Path) -> str:
    url = f"sqlite:///{path}"
    receipt = settled("t-1", ms=42.0)
    proof = receipt.proof[0]
    # As the verifier adds it after signing: a link, outside what is signed.
    traced = proof.model_copy(update={"landed": {**(proof.landed or {}), "trace_id": PROBE_TRACE}})
    async with await open_ledger(url, create=True) as ledger:
        await ledger.append(receipt.model_copy(update={"proof": [traced]}))
        await ledger.append(settled("t-2", ms=7.0))  # untraced: no exemplar from it
    return url


async def test_the_exporter_serves_exemplars_only_in_openmetrics(tmp_path: Path) -> None:
    url = await _ledger_with_a_traced_reading(tmp_path / "ledger.db")
    exporter = exporter_on(Place(url, "sqlite", tmp_path / "ledger.db"))
    await exporter.start()
    try:
        async with httpx.AsyncClient() as http:
            om = await http.get(exporter.url + "metrics", headers={"Accept": OM})
            plain = await http.get(exporter.url + "metrics")
    finally:
        await exporter.stop()
    assert om.headers["content-type"].startswith("application/openmetrics-text")
    line = next(x for x in om.text.splitlines() if PROBE_TRACE in x)
    assert line.startswith('landed_probe_duration_seconds_bucket{kind="record",le="0.05"}')
    exemplar = f'# {{task_id="t-1",trace_id="{PROBE_TRACE}"}} 0.042'
    assert line.endswith(exemplar) and om.text.endswith("# EOF\n")
    assert plain.headers["content-type"].startswith("text/plain")
    assert "trace_id" not in plain.text and "landed_probe_duration_seconds_bucket" in plain.text


async def _exemplars(prom_url: str, expr: str) -> list[dict[str, object]]:
    now = time.time()
    params = {"query": expr, "start": str(now - 3600), "end": str(now + 60)}
    async with httpx.AsyncClient() as http:
        body = (await http.get(prom_url + "/api/v1/query_exemplars", params=params)).json()
    assert body["status"] == "success", body
    return [e for series in body["data"] for e in series["exemplars"]]


async def test_prometheus_reads_back_the_trace_ids(tmp_path: Path) -> None:
    url = await _ledger_with_a_traced_reading(tmp_path / "ledger.db")
    exporter = exporter_on(Place(url, "sqlite", tmp_path / "ledger.db"))
    await exporter.start()
    runner = WorkerMetrics("runner", free_port())
    observe_task(12.5, TASK_TRACE, "t-9")  # as the runner does when a receipt is appended
    runner_url = await runner.start()
    try:
        targets = [exporter.url.split("/")[2], runner_url.split("/")[2]]
        with prometheus(tmp_path, scrape=targets, exemplars=True) as prom:

            async def both() -> bool:
                probe = await _exemplars(prom.url, "landed_probe_duration_seconds_bucket")
                task = await _exemplars(prom.url, "landed_task_duration_seconds_bucket")
                return bool(probe) and bool(task)

            await until("exemplars stored", both, timeout=60)
            probe = await _exemplars(prom.url, "landed_probe_duration_seconds_bucket")
            task = await _exemplars(prom.url, "landed_task_duration_seconds_bucket")
    finally:
        await runner.stop()
        await exporter.stop()
    assert [e["labels"] for e in probe] == [{"trace_id": PROBE_TRACE, "task_id": "t-1"}]
    assert float(probe[0]["value"]) == 0.042  # type: ignore[arg-type]
    assert {"trace_id": TASK_TRACE, "task_id": "t-9"} in [e["labels"] for e in task]


def test_a_long_task_id_leaves_the_exemplar_with_its_trace_id_only() -> None:
    from landed.telemetry.task_metrics import exemplar_labels

    assert exemplar_labels(TASK_TRACE, "t-1") == {"trace_id": TASK_TRACE, "task_id": "t-1"}
    assert exemplar_labels(TASK_TRACE, "x" * 200) == {"trace_id": TASK_TRACE}
