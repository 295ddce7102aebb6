"""What a role checks and assembles before it starts: its settings (refused before any
connection, naming the setting to fix), its signing key's permissions, the actor's environment,
its namespace and landed's search attributes, and the runner's parts (its head signer, the
approver keys, the claim contracts, its routing, the witness sender)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from landed.task.messages import Routing
from landed.task.names import SEARCH_ATTRIBUTES
from landed.temporal.settings import ActorSettings, RoleSettings, RunnerSettings, VerifierSettings
from landed.temporal.versioning import VersioningError, role_version

if TYPE_CHECKING:
    from landed.ledger.base import Ledger
    from landed.ledger.chain import HeadSigner
    from landed.task.claim_contracts import ClaimContracts
    from landed.task.trust import ApproverTrust
    from landed.temporal.witness import WitnessSender

__all__ = [
    "ROLES",
    "RoleError",
    "actor_env_problems",
    "approvers",
    "check_settings",
    "claim_contracts",
    "ensure_search_attributes",
    "head_signer",
    "namespace_exists",
    "private_to_owner",
    "read_pems",
    "routing",
    "settings_for",
    "walk_chain",
    "witness_sender",
]


ROLES = ("actor", "verifier", "runner")


class RoleError(RuntimeError):
    """A role cannot start as configured; the message names the setting to fix."""


def private_to_owner(path: Path) -> None:
    """The signing key is readable by its owner only: whoever else can read it can sign a
    reading the verifier never made (as ssh refuses a private key others can read)."""
    from landed.signing import SigningError

    try:
        mode = path.stat().st_mode
    except OSError:
        return  # KeyPair.load names the problem
    if os.name == "posix" and mode & 0o077:
        raise SigningError(
            f"the signing key {path} can be read by others (mode {mode & 0o777:o}); "
            f"chmod 600 {path}"
        )


def actor_env_problems(environ: Mapping[str, str]) -> list[str]:
    """Other roles' secrets in the actor's environment, by name: an act could read them."""
    return sorted(
        name
        for name in environ
        if name.upper().startswith("LANDED_SOURCES__")
        or name.upper()
        in {"LANDED_VERIFIER_SIGNING_KEY", "LANDED_LEDGER_URL", "LANDED_RUNNER_LEDGER_URL"}
    )


async def namespace_exists(client: Client) -> None:
    """The worker's namespace is served: the SDK would find out only after "ready" was said."""
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=client.namespace)
        )
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        raise RoleError(
            f"namespace {client.namespace!r} does not exist on "
            f"{client.service_client.config.target_host}; create it (temporal operator "
            f"namespace create --namespace {client.namespace}) or set TEMPORAL_NAMESPACE"
        ) from None


async def ensure_search_attributes(client: Client) -> None:
    """Register landed's Keyword search attributes on the namespace if they are missing.

    A cluster that refuses (no operator permission, Temporal Cloud) gets a message with the
    command to run once, instead of workflows that fail on their first upsert.
    """
    namespace = client.namespace
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
    except RPCError as exc:
        if exc.status not in (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED):
            raise
        # Not allowed to look (a namespace-scoped principal, Temporal Cloud): that says nothing
        # about whether they are registered. Start, and say what to do if workflows fail.
        cmd = " ".join(f"--name {n} --type Keyword" for n in SEARCH_ATTRIBUTES)
        print(
            f"landed: could not list search attributes on namespace {namespace!r} ({exc}); "
            f"if tasks fail on them, register them once: temporal operator search-attribute "
            f"create --namespace {namespace} {cmd}",
            file=sys.stderr,
        )
        return
    try:
        missing = [n for n in SEARCH_ATTRIBUTES if n not in listed.custom_attributes]
        if missing:
            await client.operator_service.add_search_attributes(
                AddSearchAttributesRequest(
                    namespace=namespace,
                    search_attributes={
                        n: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for n in missing
                    },
                )
            )
    except Exception as exc:
        cmd = " ".join(f"--name {n} --type Keyword" for n in SEARCH_ATTRIBUTES)
        raise RoleError(
            f"search attributes {', '.join(SEARCH_ATTRIBUTES)} are not registered on namespace "
            f"{namespace!r} and could not be added ({exc}); run once: "
            f"temporal operator search-attribute create --namespace {namespace} {cmd}"
        ) from exc


def read_pems(paths: list[Path]) -> list[str]:
    from landed.signing import TrustStore

    TrustStore.load(paths)  # validates every file, naming the bad one
    pems: list[str] = []
    for path in paths:
        files = sorted(path.glob("*.pub")) if path.is_dir() else [path]
        pems.extend(f.read_text() for f in files)
    return pems


async def walk_chain(ledger: Ledger) -> None:
    from landed.ledger.base import LedgerError

    try:
        await ledger.walk_chain()
    except LedgerError as exc:  # the reads walk on by themselves, and say what failed
        logging.getLogger(__name__).warning("the ledger's chain walk at start stopped: %s", exc)


def witness_sender(
    settings: RunnerSettings, client: Client, signer: HeadSigner | None
) -> WitnessSender | None:
    """The sender of each signed head to the ledger's witness (one per head key)."""
    if signer is None or not settings.witness:
        return None
    from landed.ledger.witness import witness_id
    from landed.temporal.witness import WitnessSender

    pem = signer.key.public_pem().decode()
    sender = WitnessSender(client, witness_id(signer.key.key_id), settings.task_queue, pem)
    signer.on_signed = sender.offer
    return sender


def approvers(settings: RunnerSettings) -> ApproverTrust:
    """The approver keys the runner trusts (GOV-5), checked apart from every other role's."""
    from landed.signing import SigningError, TrustStore
    from landed.temporal.approver_keys import load_approvers

    try:
        return load_approvers(settings, TrustStore.load(settings.trust).keys())
    except SigningError as exc:
        raise RoleError(str(exc)) from exc


def claim_contracts(settings: RunnerSettings) -> ClaimContracts | None:
    """The operator's claim contracts, linted: a contract a bad write would pass stops the
    runner before it judges a claim by it."""
    if settings.claim_contracts is None:
        return None
    from landed.task.claim_contracts import ContractsError
    from landed.task.claim_contracts_lint import load_claim_contracts

    try:
        return load_claim_contracts(settings.claim_contracts)
    except ContractsError as exc:
        raise RoleError(f"LANDED_RUNNER_CLAIM_CONTRACTS: {exc}") from exc


def head_signer(settings: RunnerSettings) -> HeadSigner | None:
    """The runner's chain-head key (its own, never the verifier's) and when to sign."""
    if settings.head_key is None:
        return None
    from landed.ledger.chain import HeadSigner
    from landed.signing import KeyPair, SigningError, TrustStore

    try:
        key = KeyPair.load(settings.head_key)
        verifier_keys = TrustStore.load(settings.trust)
    except SigningError as exc:
        raise RoleError(f"LANDED_RUNNER_HEAD_KEY: {exc}") from exc
    if key.key_id in verifier_keys:
        # The runner would then hold the verifier's signing key, and could sign readings.
        raise RoleError(
            f"LANDED_RUNNER_HEAD_KEY {settings.head_key} is the verifier's key (key id "
            f"{key.key_id}, trusted in LANDED_RUNNER_TRUST); the runner never holds the "
            "verifier's key: make it a key of its own with `landed keys new`"
        )
    return HeadSigner(
        key,
        every=settings.head_every,
        interval_s=settings.head_interval_s,
        foreign_after=settings.head_foreign_after_s,
    )


def routing(settings: RunnerSettings, identity: str, pems: list[str]) -> Routing:
    """Where the runner's workflows send each step, and the verifier keys they trust."""
    return Routing(
        actor_task_queue=settings.actor_task_queue,
        verifier_task_queue=settings.verifier_task_queue,
        runner=identity,
        trusted_keys=pems,
        pre_read=settings.pre_read,
        task_may_skip_pre_read=settings.task_may_skip_pre_read,
        confirm_reads=settings.confirm_reads,
        time_cap=settings.time_cap,
        # --- fleet ---
        actor_pool=settings.actor_pool,
        verify_usd_per_second=settings.verify_usd_per_second,
    )


def check_settings(settings: RoleSettings) -> None:
    """What a role's settings must hold that needs no connection: a role refuses before it
    connects, so a missing key or trust is named even where Temporal is unreachable."""
    try:
        role_version(settings)  # a bad deployment name or build id, before any connection
    except VersioningError as exc:
        raise RoleError(str(exc)) from None
    if isinstance(settings, ActorSettings):
        settings.check_separation()
    if isinstance(settings, VerifierSettings):
        settings.check_separation()
        if settings.signing_key is None:
            raise RoleError(
                "the verifier has no signing key, so nothing it reads could be proven "
                "offline; make one with `landed keys new` and set "
                "LANDED_VERIFIER_SIGNING_KEY to its .key file"
            )
    if isinstance(settings, RunnerSettings):
        if not settings.trust:
            raise RoleError(
                "the runner trusts no verifier key, so no task could ever be verified; set "
                "LANDED_RUNNER_TRUST to the verifier's .pub file (from `landed keys new`)"
            )
        head_signer(settings)  # a bad or borrowed head key is refused before connecting
        approvers(settings)  # so is a bad or borrowed approver key
        claim_contracts(settings)  # so is a claim contract a bad write would pass
        if settings.verifier_task_queue == settings.actor_task_queue:
            raise RoleError(
                "LANDED_RUNNER_VERIFIER_TASK_QUEUE equals LANDED_RUNNER_ACTOR_TASK_QUEUE; the "
                "verify step must run on the verifier's own queue"
            )


def settings_for(role: str) -> RoleSettings:
    if role == "actor":
        return ActorSettings()
    if role == "verifier":
        return VerifierSettings()
    if role == "runner":
        return RunnerSettings()
    raise RoleError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
