"""``landed mcp``'s ``verify`` tool through an in-process MCP client: one probe read now on a
real SQLite source. What the probe returned and whether it is the claim come back led by DONE
or NOT DONE; a probe the verifier's rules refuse, or that is not a probe, is a tool error
naming the fix, and nothing is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp
import pytest
from helpers.sor import make_rows_db

import landed
from landed.agents.mcp_server import build_server
from landed.agents.probe_read import ProbeReader
from landed.agents.service import LandedTools
from landed.probes.sources import SourceRegistry

COUNT = "select count(*) from rows where batch = ?"


def _server(db: Path, **reader: Any) -> Any:
    """The server over a client with no Temporal behind it (verify needs none), reading
    ``db`` as the source rows-db unless ``reader`` says otherwise."""
    tools = LandedTools(landed.Client(object(), check_roles=False))  # type: ignore[arg-type]
    sources = {"rows-db": {"url": f"sqlite:///{db}"}}
    probes = ProbeReader(**reader) if reader else ProbeReader(lambda: SourceRegistry(sources))
    return build_server(tools, probes)


def _rows(batch: str, source: str = "rows-db") -> dict[str, Any]:
    return {"kind": "record", "source": source, "query": COUNT, "params": [batch]}


async def _verify(server: Any, **arguments: Any) -> tuple[bool, str]:
    async with mcp.Client(server) as client:
        result = await client.call_tool("verify", arguments)
    return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)


async def test_what_the_probe_returned_and_whether_it_is_the_claim(tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db", preexisting=3, batch="b7")
    server = _server(db)
    failed, done = await _verify(
        server, probe=_rows("b7"), expect={"type": "count", "value": 3}, action="add 3 rows"
    )
    lines = done.splitlines()
    assert not failed and lines[0].startswith(
        "DONE: pass: the probe returned what count(3) expects"
    )
    assert lines[1] == "claim: add 3 rows" and "expectation: count(3)" in lines
    assert any(line.startswith("the probe returned ") and "bytes" in line for line in lines)
    failed, short = await _verify(server, probe=_rows("b7"), expect={"type": "count", "value": 4})
    assert not failed and short.splitlines()[0].startswith(
        "NOT DONE: mismatch: the probe did not return what count(4) expects: "
    ), short
    assert "claim: the claimed action" in short.splitlines()
    failed, none = await _verify(server, probe=_rows("b8"), expect={"type": "count", "value": 3})
    assert not failed and none.startswith("NOT DONE: ") and "what count(3) expects" in none


async def test_a_probe_that_observes_nothing_and_the_weak_default(tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db", preexisting=1, batch="b1")
    server = _server(db)
    broken = {"kind": "record", "source": "rows-db", "query": "select count(*) from nowhere"}
    failed, said = await _verify(server, probe=broken, expect={"type": "count", "value": 1})
    assert not failed and said.startswith("NOT DONE: probe-error (nothing was observed): ")
    failed, weak = await _verify(server, probe=_rows("b1"))
    assert not failed and weak.startswith(
        "DONE: pass: the probe returned what non_empty (weak default)"
    )
    assert any(line.startswith("note: non_empty is the weak default") for line in weak.splitlines())


@pytest.mark.parametrize(
    ("probe", "said"),
    [
        ({"kind": "http", "url": "http://127.0.0.1:9/orders"}, "names no source"),
        ({"kind": "record", "query": COUNT, "params": ["b"]}, "record.source: Field required"),
        (_rows("b", source="elsewhere"), "no source named 'elsewhere'"),
        ({"kind": "command", "argv": ["cat", "/etc/passwd"]}, "names no source"),
        ({"kind": "teleport"}, "unknown probe kind 'teleport'"),
    ],
)
async def test_a_probe_the_verifiers_rules_refuse_is_a_tool_error(
    tmp_path: Path, probe: dict[str, Any], said: str
) -> None:
    db = make_rows_db(tmp_path / "rows.db", preexisting=1, batch="b")
    failed, text = await _verify(_server(db), probe=probe, expect={"type": "count", "value": 1})
    assert failed and said in text, text


async def test_the_sources_come_from_the_servers_configuration(tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db", preexisting=2, batch="b2")
    config = tmp_path / "landed.toml"
    config.write_text(f'[sources.rows-db]\nurl = "sqlite:///{db}"\n')
    failed, done = await _verify(
        _server(db, config_file=str(config)),
        probe=_rows("b2"),
        expect={"type": "count", "value": 2},
    )
    assert not failed and done.startswith("DONE: "), done
    config.write_text("[sources.rows-db]\nurl = 7\n")
    failed, bad = await _verify(_server(db, config_file=str(config)), probe=_rows("b2"))
    assert failed and "configuration is invalid" in bad, bad
