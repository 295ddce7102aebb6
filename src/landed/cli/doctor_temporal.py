"""``landed doctor``'s Temporal checks: the address answers, and the namespace has landed's
search attributes (the runner registers them where it may; a namespace without them refuses
every task at its start)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from landed.cli.doctor_check import Check, bounded, first_line
from landed.task.names import SEARCH_ATTRIBUTES

if TYPE_CHECKING:
    from temporalio.client import Client

__all__ = ["temporal_checks"]

_ADDRESS_FIX = (
    "start Temporal (`landed dev` runs one), or set TEMPORAL_ADDRESS (or --address) to your "
    "server's host:port; TEMPORAL_TLS_* and TEMPORAL_API_KEY for a cluster that needs them"
)


def _create_command(namespace: str, names: list[str]) -> str:
    flags = " ".join(f"--name {n} --type Keyword" for n in names)
    return f"temporal operator search-attribute create --namespace {namespace} {flags}"


async def _connect(address: str | None, namespace: str | None, timeout: float) -> Client:
    from temporalio.client import Client

    from landed.temporal.connection import connect_options, worker_identity
    from landed.temporal.plugin import landed_plugin

    opts = connect_options(address=address, namespace=namespace)
    where = opts["target_host"]
    # Client.connect asks the server for its capabilities: an answer means it is there. The
    # plugin's data converter reads the runner's preflight answer.
    connecting = Client.connect(
        plugins=[landed_plugin()], identity=worker_identity("doctor"), **opts
    )
    return await bounded(connecting, timeout, f"Temporal at {where}")


async def _search_attributes(client: Client, timeout: float) -> Check:
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
    from temporalio.service import RPCError, RPCStatusCode

    name, namespace = "search attributes", client.namespace
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace), timeout=timedelta(seconds=timeout)
        )
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return Check.problem(
                name,
                f"namespace {namespace!r} does not exist",
                f"create it (temporal operator namespace create --namespace {namespace}) or set "
                "TEMPORAL_NAMESPACE (or --namespace) to landed's namespace",
            )
        return Check.problem(
            name,
            f"could not list the search attributes of namespace {namespace!r}: {exc}",
            "ask the cluster's operator to register them once: "
            + _create_command(namespace, list(SEARCH_ATTRIBUTES)),
        )
    missing = [n for n in SEARCH_ATTRIBUTES if n not in listed.custom_attributes]
    if missing:
        return Check.problem(
            name,
            f"namespace {namespace!r} lacks {', '.join(missing)}: tasks cannot start there",
            "start a landed runner once (it registers them), or run: "
            + _create_command(namespace, missing),
        )
    return Check.passed(name, f"{', '.join(SEARCH_ATTRIBUTES)} on namespace {namespace!r}")


async def temporal_checks(
    address: str | None, namespace: str | None, timeout: float
) -> tuple[list[Check], Client | None]:
    """The Temporal address answers; its namespace has landed's search attributes. The client
    too, when it answered (the role checks use it)."""
    from landed.temporal.connection import ConnectionSettingsError

    try:
        client = await _connect(address, namespace, timeout)
    except ConnectionSettingsError as exc:
        return [
            Check.problem("temporal", str(exc), "fix the setting named above"),
            Check.problem("search attributes", "not checked: no connection", _ADDRESS_FIX),
        ], None
    except Exception as exc:  # refused, unresolvable, timed out, TLS refused: all "no answer"
        first = first_line(exc)
        return [
            Check.problem("temporal", f"no answer: {first}", _ADDRESS_FIX),
            Check.problem(
                "search attributes", "not checked: Temporal did not answer", _ADDRESS_FIX
            ),
        ], None
    where = client.service_client.config.target_host
    answered = Check.passed("temporal", f"{where} answered (namespace {client.namespace!r})")
    return [answered, await _search_attributes(client, timeout)], client
