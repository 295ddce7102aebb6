"""``landed schema``: print the JSON Schema of landed's data shapes."""

from __future__ import annotations

import json

import typer

from landed.cli.root import app
from landed.receipts.model import Receipt

schema_app = typer.Typer(help="Print JSON Schemas of landed's data shapes.", no_args_is_help=True)
app.add_typer(schema_app, name="schema")


@schema_app.command("receipt")
def receipt_schema() -> None:
    """Print the JSON Schema of a DoD v1.0 receipt as landed writes and reads it.

    Exit codes: 0 printed.
    """
    typer.echo(json.dumps(Receipt.model_json_schema(by_alias=True), indent=2))
