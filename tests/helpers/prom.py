"""Real Prometheus and Alertmanager on free loopback ports, each with its own data folder: what
landed's rules, alerts and dashboards are tested on (the webhook they notify: helpers.webhook)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from helpers.wait import until_sync
from landed.util.orphans import stop_with_parent

__all__ = [
    "Prometheus",
    "Server",
    "alertmanager",
    "fast_rules",
    "prometheus",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not installed: run `make system-deps` (apt-get)")
    return found


class Server:
    """A child process serving HTTP on 127.0.0.1:``port``; its output goes to ``log``."""

    def __init__(self, argv: list[str], port: int, log: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        with log.open("wb") as out:
            self._proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, preexec_fn=stop_with_parent()
            )
        until_sync(f"{argv[0]} ready on {self.url} (log {log})", self._ready, timeout=30)

    def _ready(self) -> bool:
        if self._proc.poll() is not None:
            raise RuntimeError(f"exited {self._proc.returncode}:\n{self.log.read_text()[-2000:]}")
        try:
            return httpx.get(self.url + "/-/ready", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def get(self, path: str, **params: Any) -> Any:
        resp = httpx.get(self.url + path, params=params, timeout=10)
        resp.raise_for_status()
        return resp.json()

    def stop(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)


class Prometheus(Server):
    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant query's result vector; a PromQL error raises with Prometheus's message."""
        resp = httpx.get(self.url + "/api/v1/query", params={"query": expr}, timeout=10)
        body = resp.json()
        if body.get("status") != "success":
            raise ValueError(f"{expr!r}: {body.get('errorType')}: {body.get('error')}")
        return list(body["data"]["result"])

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.get("/api/v1/alerts")["data"]["alerts"])

    def targets_up(self) -> bool:
        active = self.get("/api/v1/targets")["data"]["activeTargets"]
        return bool(active) and all(t["health"] == "up" for t in active)


@contextmanager
def prometheus(
    tmp_path: Path,
    *,
    scrape: Sequence[str] = (),
    rule_files: Sequence[Path] = (),
    alertmanager_url: str | None = None,
    interval: str = "1s",
    exemplars: bool = False,
) -> Iterator[Prometheus]:
    """Prometheus scraping ``scrape`` (host:port targets, job ``landed``) every ``interval``,
    evaluating ``rule_files`` as often, sending alerts to ``alertmanager_url``; ``exemplars``
    turns on its exemplar storage (scrapes then read OpenMetrics exemplars)."""
    home = tmp_path / f"prometheus-{free_port()}"
    home.mkdir()
    config: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [{"job_name": "landed", "static_configs": [{"targets": list(scrape)}]}],
    }
    if alertmanager_url is not None:
        target = alertmanager_url.removeprefix("http://")
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [target]}]}]}
    (home / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    port = free_port()
    server = Prometheus(
        [
            _binary("prometheus"),
            f"--config.file={home / 'prometheus.yml'}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            *(["--enable-feature=exemplar-storage"] if exemplars else []),
        ],
        port,
        home / "prometheus.log",
    )
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def alertmanager(tmp_path: Path, webhook_url: str) -> Iterator[Server]:
    """Alertmanager (no cluster) sending every alert, firing and resolved, to ``webhook_url``
    at once: no grouping delay, so a test waits only for what it causes."""
    home = tmp_path / f"alertmanager-{free_port()}"
    home.mkdir()
    config = {
        "route": {
            "receiver": "test",
            "group_by": ["alertname"],
            "group_wait": "0s",
            "group_interval": "1s",
            "repeat_interval": "1h",
        },
        "receivers": [
            {"name": "test", "webhook_configs": [{"url": webhook_url, "send_resolved": True}]}
        ],
    }
    (home / "alertmanager.yml").write_text(json.dumps(config))
    port = free_port()
    server = Server(
        [
            _binary("prometheus-alertmanager"),
            f"--config.file={home / 'alertmanager.yml'}",
            f"--storage.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        port,
        home / "alertmanager.log",
    )
    try:
        yield server
    finally:
        server.stop()


def fast_rules(source: Path, target: Path, *, window: str = "20s", hold: str = "2s") -> Path:
    """``source``'s rules with every range window shortened to ``window`` (the 1-day baseline
    to ten of them) and every ``for:`` to ``hold``: the same expressions, on a test's clock."""
    baseline = f"{int(window.removesuffix('s')) * 10}s"
    doc = yaml.safe_load(source.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            expr = rule["expr"].replace("[1d]", f"[{baseline}]")
            rule["expr"] = re.sub(r"\[\d+[mh]\]", f"[{window}]", expr)
            if "for" in rule:
                rule["for"] = hold
    target.write_text(yaml.safe_dump(doc, sort_keys=False))
    return target
