"""``landed keys``: make the verifier's Ed25519 key pair and show key ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from landed.cli import app
from landed.cli.out import fail
from landed.signing import KeyPair, SigningError, key_id_of, load_public_key

__all__ = ["keys_app"]

EXIT_INVALID = 3

keys_app = typer.Typer(
    help=(
        "Signing keys for verified observations. The verifier holds the private key; "
        "`landed check --trust KEY.pub` checks signatures with the public one.\n\n"
        "Exit codes: 0 done; 3 a key file could not be written or read."
    ),
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")


def _fail(message: str, as_json: bool, error: str) -> typer.Exit:
    return fail(message, EXIT_INVALID, json_error=error if as_json else None)


@keys_app.command("new")
def keys_new(
    out: Annotated[
        Path, typer.Option("--out", help="Directory for landed-<key id>.key (0600) and .pub.")
    ] = Path(".landed/keys"),
    as_json: Annotated[
        bool, typer.Option("--json", help="Print key_id and both paths as JSON.")
    ] = False,
) -> None:
    """Make an Ed25519 key pair for the verifier and print its key id.

    Give the .key file to the verifier only (never to the actor); share the .pub file with
    whoever checks receipts. Existing files are never overwritten.

    Exit codes: 0 written; 3 the files could not be written.
    """
    key = KeyPair.generate()
    try:
        private, public = key.save(out)
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
            "private_key": str(private),
            "public_key": str(public),
        }
        typer.echo(json.dumps(info))
        return
    typer.echo(key.key_id)
    # Paths are text: "[x]" in one is not markup, ":rocket:" not an emoji.
    Console(stderr=True, soft_wrap=True, emoji=False).print(
        f"private key {private} (mode 0600, verifier only)\npublic key  {public} "
        f"(pass to landed check --trust)",
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
