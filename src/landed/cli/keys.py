"""``landed keys``: make the verifier's Ed25519 key pair and show key ids."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from landed.cli.out import fail
from landed.cli.root import app
from landed.signing import KeyPair, SigningError, key_id_of, load_public_key

__all__ = ["keys_app"]

EXIT_INVALID = 3

_USES = {
    "verifier": ("verifier", "pass to landed check --trust and LANDED_RUNNER_TRUST"),
    "head": ("runner", "pass to landed ledger verify --trust"),
    "approver": ("the approver", "add to the runner's LANDED_RUNNER_APPROVERS"),
}

keys_app = typer.Typer(
    help=(
        "Signing keys: the verifier's (readings), the runner's (chain heads), an approver's "
        "(decisions at the approval gate). The verifier holds its private key; "
        "`landed check --trust KEY.pub` checks signatures with the public one.\n\n"
        "Exit codes: 0 done; 3 a key file could not be written or read."
    ),
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")


def _fail(message: str, as_json: bool, error: str) -> typer.Exit:
    return fail(message, EXIT_INVALID, json_error=error if as_json else None)


_ROLES = ("verifier", "head", "approver")
# A person's name, as it goes into a file name and a receipt: no path or list separators.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.@+()'-]{0,99}$")


def _stem(role: str, name: str | None, key_id: str) -> str | None:
    """The key files' stem for ``role`` (None: landed-<key id>); exits on a bad role or name."""
    if role not in _ROLES:
        raise fail(f"--role {role!r}: use one of {', '.join(_ROLES)}", 2)
    if role != "approver":
        if name is not None:
            raise fail("--name is for --role approver (the person the key stands for)", 2)
        return None
    if name is None or not _NAME.match(name) or name.casefold().startswith("actor@"):
        raise fail(
            "--role approver needs --name NAME: the person the key stands for (letters, digits, "
            "space and _.@+()'-, up to 100; never an actor@ identity)",
            2,
        )
    from landed.temporal.approver_keys import approver_file_name

    return approver_file_name(name, key_id)


@keys_app.command("new")
def keys_new(
    out: Annotated[
        Path, typer.Option("--out", help="Directory for landed-<key id>.key (0600) and .pub.")
    ] = Path(".landed/keys"),
    role: Annotated[
        str,
        typer.Option(
            "--role",
            help="verifier (signs readings), head (the runner's chain heads) or approver (a "
            "person's decisions at the approval gate; needs --name).",
        ),
    ] = "verifier",
    name: Annotated[
        str | None,
        typer.Option("--name", help="The approver's name (--role approver): approver-NAME-ID."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print key_id and both paths as JSON.")
    ] = False,
) -> None:
    """Make an Ed25519 key pair and print its key id.

    verifier: give the .key file to the verifier only (never to the actor); share the .pub
    file with whoever checks receipts. head: the runner's own (LANDED_RUNNER_HEAD_KEY).
    approver: the .key stays with the person (`landed approve --key`); the runner trusts the
    .pub (LANDED_RUNNER_APPROVERS), and `landed check --trust-approver` checks receipts with it.
    Existing files are never overwritten.

    Exit codes: 0 written; 2 a bad --role or --name; 3 the files could not be written.
    """
    key = KeyPair.generate()
    stem = _stem(role, name, key.key_id)
    try:
        private, public = key.save(out, stem)
    except SigningError as exc:
        raise _fail(f"{exc}", as_json, "cannot write the key pair") from None
    except OSError as exc:
        raise _fail(
            f"cannot write the key pair under {out}: {exc.strerror or exc}; pass --out with a "
            "directory you can write to",
            as_json,
            "cannot write the key pair",
        ) from None
    if as_json:
        info = {
            "key_id": key.key_id,
            "algorithm": "ed25519",
            "role": role,
            **({"name": name} if name is not None else {}),
            "private_key": str(private),
            "public_key": str(public),
        }
        typer.echo(json.dumps(info))
        return
    typer.echo(key.key_id)
    # Paths are text: "[x]" in one is not markup, ":rocket:" not an emoji.
    holder, use = _USES[role]
    Console(stderr=True, soft_wrap=True, emoji=False).print(
        f"private key {private} (mode 0600, {holder} only)\npublic key  {public} ({use})",
        highlight=False,
        markup=False,
    )


@keys_app.command("id")
def keys_id(
    key_file: Annotated[Path, typer.Argument(metavar="KEY.pub", help="A public key file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Print the key id of a public key: the id receipts carry in landed.signature.key_id.

    Exit codes: 0 printed; 3 not a readable Ed25519 public key.
    """
    try:
        key_id = key_id_of(load_public_key(key_file))
    except SigningError as exc:
        raise _fail(str(exc), as_json, "not a public key") from None
    typer.echo(json.dumps({"key_id": key_id, "public_key": str(key_file)}) if as_json else key_id)
