"""Per-role settings: each worker role reads only its own prefix (LANDED_ACTOR_, ...)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from landed.ledger.chain import (
    DEFAULT_FOREIGN_AFTER_S,
    DEFAULT_HEAD_EVERY,
    DEFAULT_HEAD_INTERVAL_S,
)
from landed.task.checkable import check_queue
from landed.temporal.connection import worker_identity

__all__ = [
    "DEFAULT_ACTOR_QUEUE",
    "DEFAULT_RUNNER_QUEUE",
    "DEFAULT_VERIFIER_QUEUE",
    "ActorSettings",
    "RoleSettings",
    "RunnerSettings",
    "SeparationError",
    "VerifierSettings",
]

DEFAULT_ACTOR_QUEUE = "landed-actor"
DEFAULT_VERIFIER_QUEUE = "landed-verifier"
DEFAULT_RUNNER_QUEUE = "landed-runner"


class SeparationError(ValueError):
    """A role was configured so that it would share identity or queue with another role."""


def _split(value: Any) -> Any:
    # "a,b" or a JSON list both work from the environment.
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            import json

            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class RoleSettings(BaseSettings):
    """What every role has: its queue, its identity, and Temporal's own connection settings
    (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS) read by the plugin."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    role: ClassVar[str] = "role"
    task_queue: str
    identity: str | None = Field(default=None, description="Default: role@host:pid.")
    max_concurrent_activities: int = Field(default=200, ge=1)
    metrics_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="Serve Temporal's SDK metrics, landed_worker_up, /healthz and /readyz on "
        "metrics_host at this port; 0 or unset: off.",
    )
    metrics_host: str = Field(
        default="127.0.0.1",
        min_length=1,
        description="Address the metrics and health port binds (0.0.0.0 in a pod, so the "
        "kubelet's probes and Prometheus reach it).",
    )
    ready_within_s: float = Field(
        default=15.0,
        gt=0,
        le=3600,
        description="/readyz fails when Temporal has not answered the role for this long (it "
        "asks again before failing).",
    )

    # Worker versioning (landed.temporal.versioning): the role's Temporal Worker Deployment.
    versioning: bool = Field(
        default=True,
        description="Run as a version of the role's Worker Deployment (tasks pinned to the "
        "build that started them); false: an unversioned worker (`landed dev`, tests).",
    )
    deployment_name: str | None = Field(
        default=None, description="The role's Worker Deployment. Default: landed-<role>."
    )
    build_id: str | None = Field(
        default=None,
        # TEMPORAL_WORKER_BUILD_ID: the one the Temporal Worker Controller gives each pod.
        validation_alias=AliasChoices("LANDED_BUILD_ID", "TEMPORAL_WORKER_BUILD_ID"),
        description="This release's build id, one for all roles (LANDED_BUILD_ID, else the "
        "Worker Controller's TEMPORAL_WORKER_BUILD_ID). Default: the installed landed version.",
    )

    def resolved_identity(self) -> str:
        return self.identity or worker_identity(self.role)

    def public_view(self) -> dict[str, Any]:
        """What the worker prints at start: names, never secret values."""
        return {"role": self.role, "task_queue": self.task_queue}


class ActorSettings(RoleSettings):
    """The actor holds the agent's own credentials and nothing else."""

    model_config = SettingsConfigDict(env_prefix="LANDED_ACTOR_", extra="ignore")

    role: ClassVar[str] = "actor"
    task_queue: str = DEFAULT_ACTOR_QUEUE
    acts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Module paths holding @landed.act functions."
    )
    credentials: dict[str, str] = Field(
        default_factory=dict, description="The agent's own credentials: name -> URL or DSN."
    )
    act_threads: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description=(
            "Threads that run sync @landed.act functions (default: max_concurrent_activities, "
            "so every act the actor takes on runs at once instead of queueing)."
        ),
    )
    graceful_shutdown_s: float = Field(
        default=30.0,
        ge=0,
        le=3600,
        description=(
            "On SIGTERM/SIGINT, how long acts in flight may finish before they are cancelled: "
            "a deploy drains the actor instead of cutting an act's writes in half."
        ),
    )

    verifier_task_queue: str = Field(
        default=DEFAULT_VERIFIER_QUEUE, description="The verifier's queue, which this must not be."
    )
    runner_task_queue: str = Field(
        default=DEFAULT_RUNNER_QUEUE, description="The runner's queue, which this must not be."
    )

    _split_acts = field_validator("acts", mode="before")(_split)

    def check_separation(self) -> None:
        """Refuse to poll the verifier's or the runner's queue: an actor there would receive
        reads (and the probes' inputs) or workflow tasks meant for the other roles."""
        for other, queue in (
            ("verifier", self.verifier_task_queue),
            ("runner", self.runner_task_queue),
        ):
            if _shared_queue(self.task_queue, queue):
                raise SeparationError(
                    f"the actor's task queue {self.task_queue!r} is the {other}'s (or its role "
                    f"check queue); the actor "
                    f"would receive the {other}'s tasks. Set LANDED_ACTOR_TASK_QUEUE to a queue "
                    f"of its own (default {DEFAULT_ACTOR_QUEUE})"
                )

    def public_view(self) -> dict[str, Any]:
        return {
            **super().public_view(),
            "acts": list(self.acts),
            "credentials": sorted(self.credentials),
        }


def _shared_queue(mine: str, theirs: str) -> bool:
    """Whether two roles would poll one queue: each polls its queue and its role check's."""
    return bool({mine, check_queue(mine)} & {theirs, check_queue(theirs)})


class VerifierSettings(RoleSettings):
    """The verifier holds read credentials to the systems of record and the signing key."""

    model_config = SettingsConfigDict(env_prefix="LANDED_VERIFIER_", extra="ignore")

    role: ClassVar[str] = "verifier"
    task_queue: str = DEFAULT_VERIFIER_QUEUE
    signing_key: Path | None = Field(default=None, description="PEM Ed25519 private key.")
    actor_task_queue: str = Field(
        default=DEFAULT_ACTOR_QUEUE, description="The actor's queue, which this must not be."
    )
    actor_identity: str | None = Field(
        default=None, description="The actor's identity, which this must not be."
    )

    def check_separation(self) -> None:
        """Refuse to run as the actor: same queue, same identity, or an actor@ identity."""
        identity = self.resolved_identity()
        # The actor's own settings, where the same environment holds them (one shell, one
        # unit file): LANDED_VERIFIER_ACTOR_* alone would leave them unchecked.
        actor_queues = {self.actor_task_queue, os.environ.get("LANDED_ACTOR_TASK_QUEUE")}
        actor_names = {self.actor_identity, os.environ.get("LANDED_ACTOR_IDENTITY")}
        if any(_shared_queue(self.task_queue, q) for q in actor_queues if q):
            raise SeparationError(
                f"the verifier's task queue {self.task_queue!r} is the actor's (or its role check "
                f"queue); a verifier on the actor's queue would run acts or let the actor answer "
                "reads. Set LANDED_VERIFIER_TASK_QUEUE to a queue of its own "
                f"(default {DEFAULT_VERIFIER_QUEUE})"
            )
        mine = identity.casefold()
        if mine in {n.casefold() for n in actor_names if n} or mine.startswith("actor@"):
            raise SeparationError(
                f"the verifier's identity {identity!r} is the actor's; the actor can't grade "
                f"itself (DOD-2). Set LANDED_VERIFIER_IDENTITY to the verifier's own name"
            )

    def public_view(self) -> dict[str, Any]:
        return {**super().public_view(), "signing_key": bool(self.signing_key)}


class RunnerSettings(RoleSettings):
    """The runner runs the workflows and settle, and holds the ledger credentials."""

    model_config = SettingsConfigDict(env_prefix="LANDED_RUNNER_", extra="ignore")

    role: ClassVar[str] = "runner"
    task_queue: str = DEFAULT_RUNNER_QUEUE
    ledger_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("LANDED_RUNNER_LEDGER_URL", "LANDED_LEDGER_URL"),
        description="Default: sqlite:///.landed/ledger.db.",
    )
    actor_task_queue: str = DEFAULT_ACTOR_QUEUE
    verifier_task_queue: str = DEFAULT_VERIFIER_QUEUE
    trust: Annotated[list[Path], NoDecode] = Field(
        default_factory=list, description="Verifier public keys (.pub files or directories)."
    )
    max_cached_workflows: int = Field(
        default=500,
        ge=0,
        description="Running tasks the runner keeps in memory between their steps (the SDK's "
        "sticky cache); a task beyond it replays its history at its next step. Each cached "
        "AgentTask holds about 0.17 MB: with 2,000 tasks in flight the runner peaked at 291 MB "
        "with 1,000 cached and 232 MB with 500, in the same time (bench memory).",
    )
    sandbox: Literal["shared", "strict"] = Field(
        default="shared",
        description="shared: the workflow sandbox shares landed's workflow module across runs "
        "(about 3 ms less runner CPU per task); strict: it re-imports the module for every run "
        "with the SDK's restricted standard library, as the SDK does by default.",
    )
    pre_read: bool = Field(
        default=True,
        description="Read each step's before-state so a proof can't be vacuous (the operator's "
        "choice, not the task's).",
    )
    task_may_skip_pre_read: bool = Field(
        default=False,
        description="Honour a task's pre_read: false (for tasks whose probe is keyed to the task "
        "itself, and benchmarks).",
    )

    confirm_reads: bool = Field(
        default=True,
        description="Confirm a passing read-back with a second read after the task's quiet "
        "interval (durability.confirm_after) before it settles as done; off only to measure "
        "what the confirmation costs.",
    )
    claim_contracts: Path | None = Field(
        default=None,
        description="The operator's claim contracts (JSON: a proof plan per outcome class, with "
        "declared parameters): a claim by outcome class is read back by its contract; linted "
        "at start, and a contract a bad write would pass stops the runner.",
    )
    head_key: Path | None = Field(
        default=None,
        description="The runner's own PEM Ed25519 key for signing the ledger's chain head "
        "(`landed keys new`; never the verifier's). Without it the chain is still written, "
        "but `landed ledger verify` cannot tell a recomputed chain from the real one.",
    )
    head_every: int = Field(
        default=DEFAULT_HEAD_EVERY, ge=1, description="Sign the chain head every N appends."
    )
    head_interval_s: float = Field(
        default=DEFAULT_HEAD_INTERVAL_S,
        gt=0,
        le=86_400,
        description="... and at least this often while appends are unsigned.",
    )
    witness: bool = Field(
        default=True,
        description="Send each signed head to the ledger's witness (a Temporal workflow, one "
        "per head key) too, so `landed ledger verify --witness` sees a ledger cut back to an "
        "earlier head; best effort, never in a task's way.",
    )
    head_foreign_after_s: float = Field(
        default=DEFAULT_FOREIGN_AFTER_S,
        ge=0,
        description="A ledger row this runner did not write, vouched for by no head of its "
        "key for this long, is foreign: the runner stops signing heads and logs it.",
    )

    # GOV-4: the deployment's time cap (landed.governance.time_cap has the precedence).
    time_cap: timedelta | None = Field(
        default=None,
        description="Time cap for tasks that name none (seconds or ISO 8601, e.g. PT10M); a "
        "task's own time_cap wins; unset: 30 minutes.",
    )

    @field_validator("time_cap")
    @classmethod
    def _time_cap_bounds(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and not timedelta(seconds=1) <= value <= timedelta(days=7):
            raise ValueError("LANDED_RUNNER_TIME_CAP must be between 1 second and 7 days")
        return value

    _split_trust = field_validator("trust", mode="before")(_split)

    # --- fleet: the kill switch (GOV-4), the harness pool (GOV-10), verify cost (GOV-8) ---
    fleet_id: str = Field(
        default="landed-fleet",
        min_length=1,
        max_length=200,
        description="Workflow id of the fleet's switch (`landed pause`): one per namespace; "
        "every runner of a fleet names the same one.",
    )
    actor_pool: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="More actor task queues (harnesses) an act is sent to when the one it went "
        "to is unavailable (expired auth, usage limit, outage); the first is actor_task_queue.",
    )
    verify_usd_per_second: float = Field(
        default=0.0,
        ge=0,
        le=1000,
        description="Dollars per second of the verifier's probe time, counted as the verify "
        "phase's cost in receipts and the scorecard.",
    )

    _split_pool = field_validator("actor_pool", mode="before")(_split)

    # --- GOV-5: who may decide at the approval gate (landed.temporal.approver_keys) ---
    approvers: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Trusted approver public keys: NAME=KEY.pub (or NAME=DIR), or the "
        "approver-NAME-KEYID.pub files `landed keys new --role approver` writes (files or "
        "directories). Unset: no held task can be approved.",
    )
    approver_groups: dict[str, list[str]] = Field(
        default_factory=dict,
        description='Groups a task\'s approval.approver may name, as JSON: {"finance": ["dana"]}.',
    )
    actor_identity: str | None = Field(
        default=None,
        description="The actor role's Temporal identity, which may never approve (an actor@... "
        "identity never may, whatever this says).",
    )

    _split_approvers = field_validator("approvers", mode="before")(_split)

    def public_view(self) -> dict[str, Any]:
        return {
            **super().public_view(),
            "actor_task_queue": self.actor_task_queue,
            "verifier_task_queue": self.verifier_task_queue,
            "trusted_keys": len(self.trust),
            "approver_keys": len(self.approvers),
            "head_key": bool(self.head_key),
        }
