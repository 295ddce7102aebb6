"""``landed ledger verify --witness``: the ledger against the heads its witness holds.

The witness (landed.ledger.witness) is a Temporal workflow per runner head key; its heads are
read with one describe per trusted key (``--witness``) or from a file `landed ledger witness`
wrote (``--witness-file``). A ledger whose latest signed head is behind the witness's, or whose
row differs from the witness at a position it holds, gets a ``cut-back`` finding.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Annotated

import typer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import TypeAdapter, ValidationError

from landed.cli.ledger import ledger_app
from landed.cli.out import emit, fail
from landed.ledger.audit import ChainReport, Finding
from landed.ledger.base import Ledger
from landed.ledger.witness import WitnessHead, WitnessState, cut_back, witness_id
from landed.signing import SigningError, TrustStore

__all__ = [
    "AddressOption",
    "NamespaceOption",
    "WitnessError",
    "WitnessFileOption",
    "WitnessOption",
    "WitnessRead",
    "read_file",
    "read_temporal",
    "witness_findings",
    "witness_reader",
]

#: A witness file is a few dozen heads; anything larger is not one.
_MAX_FILE = 1024 * 1024
_STATES = TypeAdapter(dict[str, WitnessState])


WitnessOption = Annotated[
    bool,
    typer.Option(
        "--witness",
        help="Also compare the ledger with the heads its witness (a Temporal workflow per head "
        "key) holds: a ledger cut back to an earlier head is reported.",
    ),
]
WitnessFileOption = Annotated[
    Path | None,
    typer.Option(
        "--witness-file",
        metavar="FILE",
        help="... the same, with the heads `landed ledger witness` printed earlier.",
    ),
]
AddressOption = Annotated[
    str | None, typer.Option("--address", help="Temporal host:port (default: TEMPORAL_ADDRESS).")
]
NamespaceOption = Annotated[
    str | None,
    typer.Option("--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE)."),
]
#: Reads the witness's states for the trusted keys (None: no witness asked for).
WitnessRead = Callable[[Mapping[str, Ed25519PublicKey]], Awaitable[dict[str, WitnessState]]] | None


class WitnessError(Exception):
    """The witness could not be read: verify cannot say whether the ledger was cut back."""


async def read_temporal(
    trust: Mapping[str, Ed25519PublicKey], address: str | None, namespace: str | None
) -> dict[str, WitnessState]:
    """The witness of each trusted head key (key id -> its state), read from Temporal."""
    from temporalio.service import RPCError, RPCStatusCode

    from landed.temporal.plugin import connect
    from landed.temporal.witness import read_witness

    try:
        client = await connect(
            identity="landed-ledger-verify", address=address, namespace=namespace
        )
    except Exception as exc:
        raise WitnessError(f"cannot reach Temporal to read the ledger's witness: {exc}") from None
    states: dict[str, WitnessState] = {}
    for key_id in trust:
        try:
            state = await read_witness(client, witness_id(key_id))
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                continue
            raise WitnessError(f"reading the witness {witness_id(key_id)} failed: {exc}") from None
        if state is not None:
            states[key_id] = state
    if not states:
        raise WitnessError(
            f"no ledger witness holds a head of key(s) {', '.join(trust)} in namespace "
            f"{client.namespace}: the runner starts one with its first signed head "
            "(LANDED_RUNNER_WITNESS, on by default); check --address and --namespace"
        )
    return states


def read_file(path: Path) -> dict[str, WitnessState]:
    """A file `landed ledger witness` wrote (key id -> the witness's state)."""
    try:
        with path.open("rb") as fh:
            data = fh.read(_MAX_FILE + 1)
    except OSError as exc:
        raise WitnessError(f"cannot read the witness file {path}: {exc.strerror}") from None
    if len(data) > _MAX_FILE:
        raise WitnessError(f"{path} is larger than {_MAX_FILE:,} bytes: not a witness file")
    try:
        return _STATES.validate_json(data)
    except ValidationError as exc:
        raise WitnessError(
            f"{path} is not a witness file ({exc.error_count()} problem(s)); write one with "
            "`landed ledger witness --trust KEY > FILE`"
        ) from None


def witness_reader(
    witness: bool, path: Path | None, address: str | None, namespace: str | None
) -> WitnessRead:
    """How verify reads the witness: from Temporal (--witness) or a file (--witness-file)."""
    if path is not None:
        states = read_file(path)

        async def from_file(trust: Mapping[str, Ed25519PublicKey]) -> dict[str, WitnessState]:
            return states

        return from_file
    if not witness:
        return None

    async def from_temporal(trust: Mapping[str, Ed25519PublicKey]) -> dict[str, WitnessState]:
        return await read_temporal(trust, address, namespace)

    return from_temporal


async def witness_findings(
    ledger: Ledger,
    report: ChainReport,
    states: Mapping[str, WitnessState],
    trust: Mapping[str, Ed25519PublicKey],
) -> None:
    """Add a ``cut-back`` finding to ``report`` for each way the ledger is behind its witness."""
    heads: list[WitnessHead] = [h for state in states.values() for h in state.heads]
    wanted = {h.pos for h in heads}
    links: dict[int, str] = {}
    async for page in ledger.iter_chain():
        for row in page:  # (order, chain_pos, chain_link, ...): landed.ledger.links
            pos, link = row[1], row[2]
            if pos in wanted and link is not None:
                links[int(pos)] = str(link)
    refused = [
        f"the witness refused a head the runner signed: {why}"
        for state in states.values()
        for why in state.refused
    ]
    for message in [*cut_back(heads, trust, report.last_signed_pos, links), *refused]:
        report.findings_total += 1
        report.findings.append(Finding("cut-back", None, None, message))


@ledger_app.command("witness")
def show_witness(
    trust: Annotated[
        list[Path],
        typer.Option("--trust", metavar="KEY.pub|DIR", help="The runner's head public key(s)."),
    ],
    address: AddressOption = None,
    namespace: NamespaceOption = None,
) -> None:
    """Print the heads the ledger's witness holds, as JSON (for `ledger verify --witness-file`).

    Exit codes: 0 printed; 2 a bad key file; 3 the witness could not be read.
    """
    try:
        store = TrustStore.load(trust)
    except SigningError as exc:
        raise fail(str(exc), 2) from None
    try:
        states = asyncio.run(read_temporal(store, address, namespace))
    except WitnessError as exc:
        raise fail(str(exc), 3) from None
    out = {key_id: state.model_dump(mode="json") for key_id, state in states.items()}
    emit(json.dumps(out, indent=2).encode() + b"\n")
