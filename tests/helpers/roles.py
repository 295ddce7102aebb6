"""Run the three roles in-process against a real dev server: each its own Client.connect,
identity and fresh task queue; the runner caches no workflows (every task replays)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client as TemporalClient
from temporalio.worker import Interceptor

import landed
from landed.ledger.base import Ledger
from landed.ledger.factory import open_ledger
from landed.probes.sources import SourceRegistry
from landed.signing import KeyPair
from landed.telemetry.worker_metrics import WorkerMetrics
from landed.temporal.plugin import connect
from landed.temporal.settings import ActorSettings, RunnerSettings, VerifierSettings
from landed.temporal.versioning import bootstrap, role_version
from landed.temporal.workers import build_worker

__all__ = ["Roles", "rows_roles", "run_roles"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _key_pair(directory: Path) -> tuple[Path, Path]:
    """A key pair made once per directory, the same one for every build of one stack."""
    existing = sorted(directory.glob("landed-*.key")) if directory.is_dir() else []
    if existing:
        return existing[0], existing[0].with_suffix(".pub")
    return KeyPair.generate().save(directory)


@dataclass
class Roles:
    client: landed.Client
    temporal: TemporalClient
    ledger_url: str
    public_key: Path
    head_public_key: Path
    queues: dict[str, str]
    identities: dict[str, str]
    metrics: dict[str, str]  # role -> host:port of its metrics page (run_roles(metrics=True))

    async def ledger(self) -> Ledger:
        return await open_ledger(self.ledger_url, create=False)


@asynccontextmanager
async def run_roles(
    address: str,
    tmp_path: Path,
    *,
    credentials: Mapping[str, str] | None = None,
    sources: Mapping[str, Any] | None = None,
    acts: tuple[str, ...] = ("helpers.acts",),
    max_cached_workflows: int = 0,
    identities: Mapping[str, str] | None = None,
    runner: Mapping[str, Any] | None = None,
    actor: Mapping[str, Any] | None = None,
    runner_interceptors: Sequence[Interceptor] = (),
    metrics: bool = False,
    versioning: Mapping[str, str] | None = None,
    tag: str | None = None,
    check_roles: bool = True,
) -> AsyncIterator[Roles]:
    """``identities`` overrides role identities (e.g. an actor sharing the verifier's);
    ``runner`` adds runner settings (the operator's, e.g. task_may_skip_pre_read); ``actor``,
    actor settings (e.g. few max_concurrent_activities);
    ``metrics``: each role serves its SDK metrics and landed_worker_up on a port of its own.
    ``versioning`` (role -> deployment name, plus "build_id"): versioned workers, each made
    current as `landed worker` does when its deployment has none. Without it the roles run
    unversioned: every test has fresh task queues on the session's one server and runs one
    build, so pinning has nothing to keep apart (the versioning tests ask for it).
    ``tag``: the same tag gives the same queues, identities, keys and ledger (a second build
    of the same stack). ``check_roles=False``: the client starts tasks without asking the
    roles first (a test of a role that is meant to be missing)."""
    tag = tag or uuid.uuid4().hex[:10]
    queues = {r: f"{r}-{tag}" for r in ("actor", "verifier", "runner")}
    identities = {r: f"{r}@test-{tag}" for r in queues} | {
        r: f"{name}-{tag}" for r, name in (identities or {}).items()
    }
    private, public = _key_pair(tmp_path / f"keys-{tag}")
    # The runner's own chain-head key, apart from the verifier's.
    head_private, head_public = _key_pair(tmp_path / f"head-keys-{tag}")
    ledger_url = f"sqlite:///{tmp_path / f'ledger-{tag}.db'}"
    settings = {
        "actor": ActorSettings(
            task_queue=queues["actor"],
            identity=identities["actor"],
            acts=list(acts),
            credentials=dict(credentials or {}),
            **dict(actor or {}),
        ),
        "verifier": VerifierSettings(
            task_queue=queues["verifier"],
            identity=identities["verifier"],
            signing_key=private,
            actor_task_queue=queues["actor"],
        ),
        "runner": RunnerSettings(
            **{
                "task_queue": queues["runner"],
                "identity": identities["runner"],
                "ledger_url": ledger_url,
                "actor_task_queue": queues["actor"],
                "verifier_task_queue": queues["verifier"],
                "trust": [public],
                "head_key": head_private,
                "max_cached_workflows": max_cached_workflows,
                # Every in-process test runs the workflow under the SDK's full sandbox, which
                # stops a nondeterministic call in landed's workflow code; `landed dev` and the
                # real-process tests run it as shipped (shared).
                "sandbox": "strict",
                **dict(runner or {}),
            }
        ),
    }
    for role, cfg in settings.items():
        cfg.versioning = versioning is not None
        if versioning is not None:
            cfg.deployment_name = versioning[role]
            cfg.build_id = versioning["build_id"]
    registry = SourceRegistry(dict(sources or {}), observer=identities["verifier"])
    pages: dict[str, str] = {}
    async with AsyncExitStack() as stack:
        for role, cfg in settings.items():
            page = WorkerMetrics(role, _free_port()) if metrics else None
            if page is not None:
                pages[role] = (await page.start()).removeprefix("http://").split("/")[0]
                stack.push_async_callback(page.stop)
            runtime = page.runtime if page is not None else None
            client = await connect(identity=identities[role], address=address, runtime=runtime)
            worker, _view, cleanup = await build_worker(
                cfg,
                client,
                identities[role],
                registry=registry if role == "verifier" else None,
                interceptors=runner_interceptors if role == "runner" else (),
            )
            if cleanup is not None:
                stack.push_async_callback(cleanup)
            await stack.enter_async_context(worker)
            version = role_version(cfg)
            if version is not None:
                await bootstrap(client, version, identity=identities[role])
            if page is not None:
                page.polling()
        temporal = await connect(identity=f"client@test-{tag}", address=address)
        yield Roles(
            client=landed.Client(temporal, task_queue=queues["runner"], check_roles=check_roles),
            temporal=temporal,
            ledger_url=ledger_url,
            public_key=public,
            head_public_key=head_public,
            queues=queues,
            identities=identities,
            metrics=pages,
        )


def rows_roles(
    address: str,
    tmp_path: Path,
    db: Path,
    *,
    verifier: bool = True,
    metrics: bool = False,
    **runner: Any,
) -> Any:
    """The roles over the rows database of helpers.sor: the actor's credential and the
    verifier's source both name it rows-db. ``verifier=False``: the runner reads from a queue
    no verifier polls (reads wait until the time cap)."""
    if not verifier:
        runner["verifier_task_queue"] = f"nobody-{uuid.uuid4().hex[:8]}"
    return run_roles(
        address,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}} if verifier else None,
        runner=runner or None,
        metrics=metrics,
        # No verifier: the client's role check would refuse every task before it starts.
        check_roles=verifier,
    )
