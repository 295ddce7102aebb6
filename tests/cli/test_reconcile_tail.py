"""The claim stream as bytes: bounded lines, a file followed through truncation and rotation, the
offset a restart resumes from, and offsets committed only in order (no Temporal here)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from helpers.wait import until

from landed.cli.reconcile_run import Committer
from landed.cli.reconcile_tail import Line, Notice, Offset, Tail, load_offset, save_offset


async def _all(tail: Tail) -> list[Line | Notice]:
    return [item async for item in tail.lines()]


def _texts(items: list[Line | Notice]) -> list[str]:
    return [
        item.data.decode() if isinstance(item, Line) and item.data is not None else repr(item)
        for item in items
        if isinstance(item, Line)
    ]


async def test_a_line_over_the_limit_is_reported_and_the_next_kept(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"one\n" + b"x" * 5000 + b"\nthree\nlast-without-newline")
    items = await _all(Tail(path, max_line=1024))
    lines = [i for i in items if isinstance(i, Line)]
    assert [line.number for line in lines] == [1, 2, 3, 4]
    assert lines[1].data is None and "longer than 1,024 bytes" in (lines[1].problem or "")
    assert [lines[0].data, lines[2].data, lines[3].data] == [
        b"one",
        b"three",
        b"last-without-newline",
    ]
    # Each line's end is where the next one starts: the offset a restart resumes from.
    assert lines[2].end.offset == path.read_bytes().index(b"last")


class _Follower:
    """A Tail with --follow read in the background, its items collected as they come."""

    def __init__(self, path: Path, resume: Offset | None = None) -> None:
        self.items: list[Line | Notice] = []
        self.tail = Tail(path, max_line=1024, follow=True, poll=0.02, idle=1.0, resume=resume)
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for item in self.tail.lines():
            self.items.append(item)

    def texts(self) -> list[str]:
        return _texts(self.items)

    def notices(self) -> list[str]:
        return [i.message for i in self.items if isinstance(i, Notice)]


def _append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


async def test_a_file_truncated_while_followed_is_read_again_from_its_start(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("a\nb\n")
    follower = _Follower(path)
    await until("both lines read", lambda: follower.texts() == ["a", "b"])
    _append(path, "half-writ")  # a line being written when the file is cut
    await asyncio.sleep(0.1)
    with open(path, "w") as f:
        f.write("c\n")
    await follower.task
    assert follower.texts() == ["a", "b", "c"]
    (notice,) = follower.notices()
    assert "truncated while followed" in notice and "9-byte line" in notice
    (c,) = [i for i in follower.items if isinstance(i, Line) and i.data == b"c"]
    assert c.number == 1 and c.end.offset == 2


async def test_rotation_while_followed_loses_no_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("a\n")
    follower = _Follower(path)
    await until("the first line read", lambda: follower.texts() == ["a"])
    # Written just before the move, then moved away (logrotate): still read from the old file.
    _append(path, "b\n")
    os.rename(path, tmp_path / "c.jsonl.1")
    path.write_text("c\nd\n")
    await follower.task
    assert follower.texts() == ["a", "b", "c", "d"]
    assert any("rotated" in n for n in follower.notices())
    d = follower.items[-1]
    assert isinstance(d, Line) and d.number == 2
    assert (d.end.dev, d.end.ino) == (os.stat(path).st_dev, os.stat(path).st_ino)


async def test_a_restart_resumes_at_the_committed_offset(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("a\nb\nc\n")
    lines = [i for i in await _all(Tail(path, max_line=1024)) if isinstance(i, Line)]
    resumed = await _all(Tail(path, max_line=1024, resume=lines[1].end))
    assert _texts(resumed) == ["c"]
    assert [i.number for i in resumed if isinstance(i, Line)] == [3]
    assert "resuming" in repr(resumed[0])
    # Shorter than the offset (truncated while stopped), or another file: from the start.
    short = Offset(lines[2].end.dev, lines[2].end.ino, 10_000, 9)
    assert _texts(await _all(Tail(path, max_line=1024, resume=short))) == ["a", "b", "c"]
    other = Offset(lines[2].end.dev, lines[2].end.ino + 1, 2, 1)
    again = await _all(Tail(path, max_line=1024, resume=other))
    assert _texts(again) == ["a", "b", "c"] and "rotated" in repr(again[0])


def test_the_state_file_round_trips_and_a_broken_one_names_the_fix(tmp_path: Path) -> None:
    state = tmp_path / "c.jsonl.landed-offset"
    assert load_offset(state) is None
    save_offset(state, Offset(1, 2, 3, 4))
    assert load_offset(state) == Offset(1, 2, 3, 4)
    state.write_text("{half")
    with pytest.raises(ValueError, match="delete it to read the stream from its start"):
        load_offset(state)


def test_offsets_are_committed_only_past_lines_that_are_all_done() -> None:
    commits = Committer()
    slots = [commits.add(Offset(0, 0, end, n)) for n, end in enumerate((10, 20, 30), start=1)]
    commits.done(slots[1])  # line 2 started before line 1: nothing committed yet
    assert commits.committed is None
    commits.done(slots[0])
    assert commits.committed == Offset(0, 0, 20, 2)
    commits.done(slots[2])
    assert commits.committed == Offset(0, 0, 30, 3)
