"""``landed reconcile`` on the real dev server: a followed stream restarted at its committed
offset verifies no claim twice; the command's JSON, bad-line reports and exit codes; claims by
outcome class judged by the operator's contracts (``--contracts``, the runner's own file)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from helpers.claim_contracts import CONTRACTS
from helpers.roles import Roles, run_roles
from helpers.sor import Site
from helpers.wait import until

from landed.cli.reconcile_run import Tally, reconcile
from landed.cli.reconcile_tail import Offset, Tail, load_offset, save_offset


def _claim(task_id: str, slug: str, status: str = "done") -> str:
    return json.dumps(
        {
            "task_id": task_id,
            "claimed_status": status,
            "owner": "outside-agent",
            "outcome": "posts.published",
            "params": {"slug": slug},
        }
    )


def _roles(temporal_dev: str, tmp_path: Path, site: Site) -> Any:
    contracts = tmp_path / "claim-contracts.json"
    contracts.write_text(json.dumps(CONTRACTS))
    return run_roles(
        temporal_dev,
        tmp_path,
        sources={"site": {"url": site.url}},
        runner={"claim_contracts": contracts},
    )


async def _follow(roles: Roles, stream: Path, state: Path) -> tuple[Tally, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    tail = Tail(stream, max_line=4096, follow=True, poll=0.05, idle=0.5, resume=load_offset(state))
    tally = await reconcile(
        roles.temporal,
        tail,
        task_queue=roles.queues["runner"],
        concurrency=4,
        emit=events.append,
        state=state,
    )
    return tally, [e for e in events if e["event"] == "settled"]


async def test_a_restarted_follow_resumes_at_its_offset_and_verifies_nothing_twice(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    for slug in ("f1", "f2", "f3"):
        site.posts.append({"slug": slug})
    stream, state = tmp_path / "claims.jsonl", tmp_path / "claims.state"
    stream.write_text(_claim("f-1", "f1") + "\n" + _claim("f-2", "f2") + "\n")
    async with _roles(temporal_dev, tmp_path, site) as roles:
        _, first = await _follow(roles, stream, state)
        after_two = load_offset(state)
        with open(stream, "a") as f:
            f.write(_claim("f-3", "f3") + "\n" + _claim("f-4", "never", "done") + "\n")
        _, second = await _follow(roles, stream, state)
        reads = site.count_reads
        # A crash before the offset was written: the state still says line 1. The lines read
        # again attach to their settled workflows; nothing is read back a second time.
        assert after_two is not None
        save_offset(state, Offset(after_two.dev, after_two.ino, len(_claim("f-1", "f1")) + 1, 1))
        _, third = await _follow(roles, stream, state)
    assert sorted((e["line"], e["verdict"], e["existing"]) for e in first) == [
        (1, "verified", False),
        (2, "verified", False),
    ]
    assert after_two is not None and after_two.line == 2
    assert sorted((e["line"], e["existing"]) for e in second) == [(3, False), (4, False)]
    assert {e["line"]: e["verdict"] for e in second}[4] != "verified"  # the lie
    assert sorted((e["line"], e["existing"]) for e in third) == [(2, True), (3, True), (4, True)]
    assert site.count_reads == reads
    final = load_offset(state)
    assert final is not None and final.line == 4 and final.offset == stream.stat().st_size


async def test_a_stream_truncated_and_rotated_while_followed_loses_and_repeats_nothing(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    for slug in ("t1", "t2", "t3"):
        site.posts.append({"slug": slug})
    stream, state = tmp_path / "claims.jsonl", tmp_path / "claims.state"
    stream.write_text(_claim("t-1", "t1") + "\n" + _claim("t-2", "t2") + "\n")
    events: list[dict[str, Any]] = []
    async with _roles(temporal_dev, tmp_path, site) as roles:
        # Idle counts only once every claim in flight has settled.
        tail = Tail(stream, max_line=4096, follow=True, poll=0.05, idle=3.0)
        run = asyncio.create_task(
            reconcile(
                roles.temporal,
                tail,
                task_queue=roles.queues["runner"],
                concurrency=4,
                emit=events.append,
                state=state,
            )
        )

        def settled() -> list[str]:
            return sorted(e["task_id"] for e in events if e["event"] == "settled")

        await until("the first claims settled", lambda: settled() == ["t-1", "t-2"])
        reads = site.count_reads
        # Truncated and written again from its start (copytruncate), shorter than what was read.
        stream.write_text(_claim("t-1", "t1") + "\n")
        await until("the first claim seen again", lambda: settled() == ["t-1", "t-1", "t-2"])
        # Rotated (logrotate): moved away, a new file in its place.
        stream.rename(tmp_path / "claims.jsonl.1")
        stream.write_text(_claim("t-3", "t3") + "\n")
        tally = await run
    notices = [e["message"] for e in events if e["event"] == "notice"]
    assert any("truncated while followed" in n for n in notices), notices
    assert any("rotated" in n for n in notices), notices
    again = [e for e in events if e["event"] == "settled" and e["existing"]]
    assert [e["task_id"] for e in again] == ["t-1"]  # read again after the cut: attached
    assert (tally.settled, tally.verified, tally.started, tally.existing) == (4, 4, 4, 1)
    # Only t-3 was read back after the cut (a read and its confirmation): t-1 not again.
    assert site.count_reads - reads == 2
    final = load_offset(state)
    assert final is not None and final.ino == stream.stat().st_ino and final.line == 1


async def _landed(stdin: bytes | None, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "landed",
        "reconcile",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_the_command_prints_each_settled_receipt_and_names_bad_lines(
    temporal_dev: str, tmp_path: Path, site: Site
) -> None:
    site.posts.append({"slug": "c1"})
    stream = tmp_path / "claims.jsonl"
    stream.write_text(_claim("cli-1", "c1") + "\n{broken\n" + _claim("cli-lie", "nope") + "\n")
    async with _roles(temporal_dev, tmp_path, site) as roles:
        where = ["--address", temporal_dev, "--task-queue", roles.queues["runner"]]
        code, out, err = await _landed(None, str(stream), "--json", *where)
        piped = await _landed(stream.read_bytes(), "-", *where)
        clean = tmp_path / "clean.jsonl"
        clean.write_text(_claim("cli-1", "c1") + "\n")
        only_good = await _landed(None, str(clean), *where)
        only_bad = tmp_path / "bad.jsonl"
        only_bad.write_text('{"claimed_status": "done"}\n')
        bad = await _landed(None, str(only_bad), *where)
        junk = tmp_path / "junk.jsonl"
        junk.write_text("not json\n" * 500)
        flood = await _landed(None, str(junk), "--json", *where)
        # --contracts: the runner's own file; a class it cannot judge is a bad line, named.
        judged = tmp_path / "judged.jsonl"
        unknown = json.dumps({"task_id": "cli-x", "outcome": "posts.gone", "params": {"s": "a"}})
        judged.write_text(_claim("cli-2", "c1") + "\n" + unknown + "\n")
        own = str(tmp_path / "claim-contracts.json")
        checked = await _landed(None, str(judged), "--json", "--contracts", own, *where)
    events = [json.loads(line) for line in out.splitlines()]
    settled = {e["task_id"]: e for e in events if e["event"] == "settled"}
    assert settled["cli-1"]["receipt"]["verdict"] == "verified"
    assert settled["cli-lie"]["receipt"]["claimed_status"] == "done"
    assert settled["cli-lie"]["verdict"] != "verified"
    (invalid,) = [e for e in events if e["event"] == "invalid"]
    assert invalid["line"] == 2 and "not valid JSON" in invalid["message"]
    assert "line 2" in err
    assert events[-1]["event"] == "summary" and events[-1]["settled"] == 2
    assert code == 1  # a claim settled not verified (the lie)
    # stdin: the same stream again attaches to what settled, and says so.
    assert piped[0] == 1 and "(already reconciled)" in piped[1]
    assert only_good[0] == 0, only_good
    assert bad[0] == 3 and "line 1" in bad[2] and "task_id" in bad[2]
    # 500 bad lines: the first 20 are named, the rest only counted.
    flood_events = [json.loads(line) for line in flood[1].splitlines()]
    assert len([e for e in flood_events if e["event"] == "invalid"]) == 20
    assert flood_events[-1]["invalid"] == 500 and flood[2].count("not valid JSON") == 20
    assert "counted in the summary" in flood[2]
    checked_events = [json.loads(line) for line in checked[1].splitlines()]
    (ok,) = [e for e in checked_events if e["event"] == "settled"]
    assert ok["verdict"] == "verified"
    assert ok["receipt"]["landed"]["claim_contracts_sha256"] is not None
    (named,) = [e for e in checked_events if e["event"] == "invalid"]
    assert (
        named["line"] == 2
        and "'posts.gone' is not in the operator's claim contracts" in (named["message"])
    )
    assert checked[0] == 3  # every claim started settled verified; one line was bad
