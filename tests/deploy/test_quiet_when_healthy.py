"""A healthy `landed dev` stays quiet: a real Prometheus scrapes exactly what the shipped
deploy/prometheus/prometheus.yml names (the exporter and the three roles' metrics ports, which
`landed dev` opens) and evaluates the shipped rules for several cycles: no alert pending or
firing, every target up, the verifier reporting up."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from helpers.prom import Prometheus, free_port
from helpers.wait import until_sync

from landed.cli.dev import METRICS_PORTS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "deploy" / "prometheus" / "prometheus.yml"
CYCLES = 8  # evaluations at 1 s each, after every target is up


def _port(url: str) -> int:
    return int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[dict[str, Any]]:
    exe = Path(sys.executable).with_name("landed")
    argv = [str(exe), "dev", "--dir", str(tmp_path / "home"), "--in-memory", "--headless"]
    err = (tmp_path / "dev.err").open("wb")
    proc = subprocess.Popen(
        [*argv, "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.endswith("_METRICS_PORT")},
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            if event.get("event") == "ready":
                break
        else:
            pytest.fail(f"landed dev exited: {(tmp_path / 'dev.err').read_text()[-2000:]}")
        event["stderr"] = tmp_path / "dev.err"
        yield event
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
        err.close()


def _up(url: str) -> bool:
    return 'landed_worker_up{role="' in (text := httpx.get(url, timeout=10).text) and (
        text.split('landed_worker_up{role="', 1)[1].split("\n", 1)[0].endswith("} 1")
    )


def _opened(ready: dict[str, Any]) -> dict[int, int]:
    """The shipped config's port for each endpoint `landed dev` opened -> the port it got."""
    opened = {9464: _port(ready["exporter"])}
    for role, want in METRICS_PORTS.items():
        opened[want] = _port(ready["workers"][role]["metrics"])
    return opened


def test_a_healthy_dev_stack_raises_no_alert(dev: dict[str, Any], tmp_path: Path) -> None:
    shipped = yaml.safe_load(SHIPPED.read_text())
    targets = [
        t
        for job in shipped["scrape_configs"]
        for sc in job["static_configs"]
        for t in sc["targets"]
    ]
    opened = _opened(dev)
    # The shipped config scrapes exactly what landed dev opens, no more, no fewer.
    assert sorted(int(t.rsplit(":", 1)[1]) for t in targets) == sorted(opened)
    taken = dev["stderr"].read_text()
    for want, got in opened.items():
        assert got == want or f"port {want} is taken" in taken, (want, got)
    # Healthy means each role polls its queue: wait for that on its own page, so Prometheus's
    # very first evaluation already sees a healthy stack.
    for role in METRICS_PORTS:
        url = dev["workers"][role]["metrics"]
        until_sync(f"{role} up", lambda url=url: _up(url), timeout=60)
    # The same config, pointed at the ports this run got, on a test's clock.
    config = dict(shipped)
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(SHIPPED.parent / f) for f in shipped["rule_files"]]
    config.pop("alerting")
    for job in config["scrape_configs"]:
        for sc in job["static_configs"]:
            sc["targets"] = [f"127.0.0.1:{opened[int(t.rsplit(':', 1)[1])]}" for t in sc["targets"]]
    home = tmp_path / "prometheus"
    home.mkdir()
    (home / "prometheus.yml").write_text(json.dumps(config))
    port = free_port()
    prom = Prometheus(
        [
            "prometheus",
            f"--config.file={home / 'prometheus.yml'}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        port,
        home / "prometheus.log",
    )
    try:
        until_sync("every target up", prom.targets_up, timeout=60)
        until_sync(
            "the verifier reported up",
            lambda: prom.query('landed_worker_up{role="verifier"} == 1'),
            timeout=60,
        )
        # An evaluation before Prometheus's first scrapes sees no verifier series at all (that
        # is down, rightly): wait out its start-up, a few evaluations at most, then hold it.
        until_sync("no alert after the first scrapes", lambda: prom.alerts() == [], timeout=10)
        started = time.monotonic()
        while time.monotonic() - started < CYCLES:
            assert prom.alerts() == [], prom.alerts()
            time.sleep(0.5)
        groups = prom.get("/api/v1/rules")["data"]["groups"]
        assert groups and all(g["lastEvaluation"] > "2000" for g in groups)
        assert all(r["health"] == "ok" for g in groups for r in g["rules"]), groups
        assert prom.targets_up()
    finally:
        prom.stop()


def test_dev_asks_for_the_shipped_ports_or_free_ones_and_keeps_the_callers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from landed.cli.dev import metrics_env

    for role in METRICS_PORTS:
        monkeypatch.delenv(f"LANDED_{role.upper()}_METRICS_PORT", raising=False)
    with socket.socket() as held:
        with contextlib.suppress(OSError):  # held already by something else: taken all the same
            held.bind(("127.0.0.1", METRICS_PORTS["verifier"]))
            held.listen()
        env = metrics_env({"runner": {"OTEL_SERVICE_NAME": "landed-runner"}})
    verifier = int(env["verifier"]["LANDED_VERIFIER_METRICS_PORT"])
    assert verifier not in (0, METRICS_PORTS["verifier"])  # taken: a free one, never off
    assert env["runner"]["OTEL_SERVICE_NAME"] == "landed-runner"
    monkeypatch.setenv("LANDED_ACTOR_METRICS_PORT", "9999")
    assert "LANDED_ACTOR_METRICS_PORT" not in metrics_env({})["actor"]  # the caller's wins
