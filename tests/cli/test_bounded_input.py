"""Input landed did not write is bounded before it is buffered and read with one value per key:
a device, a stream without newlines or a key given twice is refused, naming the problem."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from landed.probes.guard import ContractsUnreadable, load_contracts
from landed.util import strictjson


def landed(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "landed", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow
def test_submit_reads_at_most_its_limit_of_a_device_and_starts_nothing() -> None:
    done = landed("submit", "/dev/zero", "--json", "--address", "127.0.0.1:1")
    assert done.returncode == 3, done.stderr
    answer = json.loads(done.stdout)
    assert answer["error"] == "task file too large"
    assert "1,048,576 bytes" in answer["message"] and "nothing was started" in answer["message"]


@pytest.mark.slow
def test_check_ends_a_stream_that_sends_no_newline() -> None:
    done = landed("check", "/dev/zero", "--json")
    assert done.returncode == 3, done.stderr
    invalid = json.loads(done.stdout)["invalid"]
    assert [i["line"] for i in invalid] == [1, 2]
    assert "longer than 1,048,576 bytes" in invalid[0]["reason"]
    assert "no newline came within 268,435,456 bytes" in invalid[1]["reason"]


def test_guard_contracts_from_a_device_are_unreadable_not_read_for_ever() -> None:
    with pytest.raises(ContractsUnreadable, match="more than"):
        load_contracts(Path("/dev/zero"))


def test_a_guard_contract_that_gives_a_key_twice_is_a_problem_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"action": "a", "probe": {"kind": "command", "argv": ["echo", "0"]},'
        ' "expect": {"type": "count", "value": 0}, "expect": {"type": "non_empty"}}\n'
    )
    contracts, problems = load_contracts(path)
    assert contracts == [] and len(problems) == 1
    assert "'expect' appears twice" in str(problems[0].problem)


def test_read_at_most_reads_one_byte_past_the_limit_and_no_more(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert strictjson.read_at_most(path, 10, "f") == b"x" * 10
    with pytest.raises(strictjson.TooLarge, match="longer than 9 bytes"):
        strictjson.read_at_most(path, 9, "f")

    class Endless:
        """A stream with no end that counts what it was asked for."""

        asked = 0

        def read(self, size: int = -1) -> bytes:
            assert size >= 0, "an unbounded read of an endless stream"
            self.asked += size
            return b"\0" * size

    endless = Endless()
    with pytest.raises(strictjson.TooLarge):
        strictjson.read_at_most(endless, 1 << 16, "stdin")  # type: ignore[arg-type]
    assert endless.asked == (1 << 16) + 1


def test_nested_duplicate_keys_are_named() -> None:
    with pytest.raises(strictjson.DuplicateKey, match="'b' appears twice"):
        strictjson.loads('{"a": {"b": 1, "b": 2}}')
    assert strictjson.loads('{"a": {"b": 1}, "b": 2}') == {"a": {"b": 1}, "b": 2}
