"""JSONL intake: odd bytes, loose logs, line limits, and the fast reader agreeing with pydantic."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from landed import InvalidLine, Receipt, read_receipts
from landed.receipts.check import check_stream
from landed.receipts.grading import evaluate
from landed.receipts.intake import FastReceipt, decode_line, decode_receipt, read_batches

GOOD = {
    "task_id": "t1",
    "owner": "worker-a",
    "claimed_status": "done",
    "proof": [
        {
            "kind": "http_contains",
            "ref": "https://example.com/",
            "expect": "ok",
            "checked_by": "runner",
            "checked_at": "2026-11-07T01:00:00Z",
            "result": "pass",
        }
    ],
    "settled_at": "2026-11-07T01:00:05Z",
}
GOOD_LINE = orjson.dumps(GOOD)


def read(data: bytes, **kwargs: Any) -> list[Receipt | InvalidLine]:
    return list(read_receipts(io.BytesIO(data), **kwargs))


def test_a_receipt_per_line_with_blank_lines_between() -> None:
    records = read(GOOD_LINE + b"\n\n   \n" + GOOD_LINE + b"\n")
    assert [type(r) for r in records] == [Receipt, Receipt]


def test_a_utf8_byte_order_mark_and_crlf_are_read_through() -> None:
    records = read(b"\xef\xbb\xbf" + GOOD_LINE + b"\r\n" + GOOD_LINE + b"\r\n")
    assert all(isinstance(r, Receipt) for r in records) and len(records) == 2


def test_a_utf16_file_is_refused_with_the_fix() -> None:
    (record,) = read("\ufeff".encode("utf-16-le") + GOOD_LINE.decode().encode("utf-16-le"))
    assert isinstance(record, InvalidLine) and record.line == 1
    assert "UTF-8" in record.reason


def test_an_empty_or_blank_input_is_invalid_not_vacuously_fine() -> None:
    for data in (b"", b"\n\n", b"  \r\n"):
        (record,) = read(data)
        assert isinstance(record, InvalidLine)
        assert record.line == 0 and "no receipts" in record.reason


def test_bad_lines_are_reported_by_number_and_the_rest_still_read() -> None:
    data = b"\n".join(
        [
            GOOD_LINE,
            b"\x00\xff\xfe garbage \x9c",
            b'{"task_id": "t2", "claimed_status": "done"',
            b"[1, 2, 3]",
            b'{"task_id": "t3", "claimed_status": "done", "exit_code": "zero"}',
            b'{"task_id": "t4", "claimed_status": "done", "proof": "a link"}',
            b'{"task_id": "t5", "claimed_status": "done", "settled_at": "yesterday"}',
            b"[" * 100_000 + b"]" * 100_000,
            GOOD_LINE,
        ]
    )
    records = read(data)
    assert isinstance(records[0], Receipt) and isinstance(records[-1], Receipt)
    bad = records[1:-1]
    assert all(isinstance(r, InvalidLine) for r in bad)
    assert [r.line for r in bad if isinstance(r, InvalidLine)] == [2, 3, 4, 5, 6, 7, 8]
    reasons = [r.reason for r in bad if isinstance(r, InvalidLine)]
    assert "not valid JSON" in reasons[0] and "not valid JSON" in reasons[1]
    assert "a JSON array" in reasons[2]
    assert reasons[3].startswith("exit_code:")
    assert reasons[4].startswith("proof:")
    assert reasons[5].startswith("settled_at:")
    assert "nested too deeply" in reasons[6] or "not valid JSON" in reasons[6]


def test_a_line_over_the_cap_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    # A 100 MB single line: reported invalid by number without being held whole.
    path = tmp_path / "big.jsonl"
    with path.open("wb") as out:
        out.write(b'{"task_id": "big", "report": "')
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            out.write(chunk)
        out.write(b'", "claimed_status": "done"}\n' + GOOD_LINE + b"\n")
    tracemalloc.start()
    try:
        with path.open("rb") as stream:
            records = list(read_receipts(stream))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(records[0], InvalidLine) and records[0].line == 1
    assert "longer than 1,048,576 bytes" in records[0].reason
    assert isinstance(records[1], Receipt)
    assert peak < 8 << 20, f"peak {peak:,} bytes"


def test_the_line_cap_is_exact() -> None:
    line = orjson.dumps({**GOOD, "report": "y" * 100})
    fits = read(line + b"\n", max_line_bytes=len(line))
    assert isinstance(fits[0], Receipt)
    over = read(line + b"\n", max_line_bytes=len(line) - 1)
    assert isinstance(over[0], InvalidLine)


def test_unknown_fields_are_kept_and_unknown_proof_kinds_read() -> None:
    data = {
        **GOOD,
        "model": "x-1",
        "proof": [{"kind": "vibes", "result": "pass", "why": "trust me"}],
    }
    (record,) = read(orjson.dumps(data))
    assert isinstance(record, Receipt)
    assert record.model_extra == {"model": "x-1"}
    assert record.proof[0].kind == "vibes" and record.proof[0].model_extra == {"why": "trust me"}


def test_loose_logs_map_onto_the_receipt() -> None:
    lines = [
        b'{"status": "done"}',
        b'{"state": "held", "id": 42}',
        b'{"id": "job-7", "status": "executed", "claimed_status": "done"}',
    ]
    first, second, third = read(b"\n".join(lines))
    assert isinstance(first, Receipt) and isinstance(second, Receipt) and isinstance(third, Receipt)
    assert (first.task_id, first.claimed_status) == ("line-1", "done")
    assert (second.task_id, second.claimed_status) == ("42", "held")
    assert (third.task_id, third.claimed_status) == ("job-7", "done")  # the canonical field wins
    assert third.model_extra == {"id": "job-7", "status": "executed"}


def test_a_blank_claimed_status_does_not_hide_a_status_alias() -> None:
    # An empty canonical status says nothing: the alias's "done" is the claim, on both paths.
    for blank in ("", "   ", "\t"):
        for alias in ("status", "state"):
            data = orjson.dumps({"task_id": "a", "claimed_status": blank, alias: "done"})
            (full,) = read(data)
            assert isinstance(full, Receipt) and full.claimed_status == "done"
            fast = decode_line(1, data)
            assert not isinstance(fast, InvalidLine) and fast is not None
            assert fast.claimed_status == "done"
            assert evaluate(fast).claims_done and not evaluate(fast).meets_bar
    # A blank alias does not replace a blank status; a real canonical status still wins.
    (record,) = read(b'{"task_id": "a", "claimed_status": "", "status": " ", "state": "done"}')
    assert isinstance(record, Receipt) and record.claimed_status == "done"
    (kept,) = read(b'{"task_id": "a", "claimed_status": "executed", "status": "done"}')
    assert isinstance(kept, Receipt) and kept.claimed_status == "executed"


def test_a_blank_claimed_status_beside_done_fails_the_check(tmp_path: Path) -> None:
    sink = _Collect()
    card = check_stream(io.BytesIO(b'{"task_id":"a","claimed_status":"","status":"done"}\n'), sink)
    assert card.done_claimed == 1 and card.done_proven == 0


class _Collect:
    def __init__(self) -> None:
        self.tasks: list[Any] = []
        self.invalids: list[InvalidLine] = []

    def task(self, line: int, record: Any, grade: Any) -> None:
        self.tasks.append((line, record, grade))

    def invalid(self, item: InvalidLine) -> None:
        self.invalids.append(item)


def test_a_record_with_no_status_at_all_is_invalid() -> None:
    (record,) = read(b'{"task_id": "x", "msg": "hello"}')
    assert isinstance(record, InvalidLine)
    assert "no claimed_status" in record.reason


def test_the_fast_reader_takes_plain_receipts_and_hands_the_rest_to_pydantic() -> None:
    assert isinstance(decode_line(1, GOOD_LINE), FastReceipt)
    loose = decode_line(7, b'{"status": "done"}')  # loose logs are mapped on the fast path
    assert isinstance(loose, FastReceipt)
    assert (loose.task_id, loose.claimed_status) == ("line-7", "done")
    numbered = decode_line(1, b'{"id": 42, "state": "held"}')
    assert isinstance(numbered, FastReceipt)
    assert (numbered.task_id, numbered.claimed_status) == ("42", "held")
    assert isinstance(decode_line(1, b'{"id": 4.5, "status": "done"}'), InvalidLine)
    assert isinstance(decode_line(1, b'{"id": "x", "status": 5}'), InvalidLine)
    lax = orjson.dumps({**GOOD, "exit_code": 0.0})  # pydantic's lax int
    assert isinstance(decode_line(1, lax), Receipt)
    # "class_" is an unknown key on both readers (the model reads the field from "class" only).
    alias = orjson.dumps({**GOOD, "business_outcome": {"class_": 5}})
    assert isinstance(decode_line(1, alias), FastReceipt)
    assert Receipt.model_validate(orjson.loads(alias)).business_outcome.class_ is None  # type: ignore[union-attr]


# --- hypothesis: the reader never raises, and the fast path agrees with the reference -------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
_times = st.one_of(
    _scalars,
    st.sampled_from(
        [
            "2026-11-07T01:00:00Z",
            "2026-11-07t01:00:00z",
            "2026-11-07 01:00:00",
            "2026-11-07T01:00:00.1234567Z",
            "2026-11-07T01:00:00+01:00",
            "2026-11-07T01:00:00+0100",
            "2026-11-07",
            "2026-11-07T01:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-07T23:59:60Z",
            "0001-01-01T00:00:00-01:00",
            "9999-12-31T23:59:59.9999999Z",
        ]
    ),
    st.from_regex(
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt _][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?"
        r"(Z|z|[+-][0-9]{2}:?[0-9]{2})?",
        fullmatch=True,
    ),
)
_words = st.sampled_from(["done", "held", "pass", "fail", "runner", "actor", "worker-a", ""])
_proof = st.dictionaries(
    st.sampled_from(["kind", "ref", "expect", "checked_by", "checked_at", "result", "landed", "x"]),
    st.one_of(_scalars, _words, _times, st.just({"live": {"ok": False}})),
    max_size=7,
)
_record = st.dictionaries(
    st.sampled_from(
        [
            "task_id",
            "claimed_status",
            "status",
            "state",
            "id",
            "owner",
            "outcome",
            "target",
            "report",
            "exit_code",
            "proof",
            "approval",
            "business_outcome",
            "cost",
            "verdict",
            "verdict_by",
            "settled_at",
            "landed",
            "dod",
            "extra",
        ]
    ),
    st.one_of(
        _scalars,
        _words,
        _times,
        st.lists(_proof, max_size=3),
        st.fixed_dictionaries(
            {}, optional={"verified": _scalars, "class": _scalars, "class_": _scalars}
        ),
        st.fixed_dictionaries({}, optional={"usd": _scalars, "input_tokens": _scalars}),
        st.fixed_dictionaries({}, optional={"revenue_usd": _scalars, "attempt": _scalars}),
        st.fixed_dictionaries({}, optional={"required": _scalars, "approved_at": _times}),
    ),
    max_size=12,
)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=_record)
def test_the_fast_reader_agrees_with_pydantic(record: dict[str, Any]) -> None:
    data = json.dumps(record).encode()  # the standard library writes integers of any size
    fast, full = decode_line(3, data), decode_receipt(3, data)
    assert isinstance(fast, InvalidLine) == isinstance(full, InvalidLine), (fast, full)
    if isinstance(full, Receipt):
        assert fast is not None and not isinstance(fast, InvalidLine)
        assert evaluate(fast) == evaluate(full)
        assert (fast.task_id, fast.claimed_status) == (full.task_id, full.claimed_status)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    chunks=st.lists(
        st.one_of(st.binary(max_size=80), st.just(GOOD_LINE), st.just(b"\n")), max_size=8
    )
)
@pytest.mark.slow
def test_the_reader_never_raises_on_any_bytes(chunks: list[bytes]) -> None:
    data = b"".join(chunks)
    for record in read_receipts(io.BytesIO(data), max_line_bytes=64):
        assert isinstance(record, Receipt | InvalidLine)
    for number, line in enumerate(data.split(b"\n"), 1):
        result = decode_line(number, line)
        assert result is None or isinstance(result, FastReceipt | Receipt | InvalidLine)
        if result is not None and not isinstance(result, InvalidLine):
            evaluate(result)


class _Seen:
    def __init__(self) -> None:
        self.seen: list[object] = []

    def task(self, line: int, record: object, graded: object) -> None:
        self.seen.append(graded)

    def invalid(self, item: InvalidLine) -> None:
        self.seen.append(item)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    chunks=st.lists(
        st.one_of(st.binary(max_size=60), st.just(GOOD_LINE), st.just(b"\n")), max_size=6
    )
)
def test_the_whole_pipeline_never_raises_and_accounts_for_every_line(chunks: list[bytes]) -> None:
    data = b"".join(chunks)
    sink = _Seen()
    card = check_stream(io.BytesIO(data), sink)
    graded = [s for s in sink.seen if not isinstance(s, InvalidLine)]
    assert card.settled == len(graded)
    nonblank = [line for line in data.split(b"\n") if line.strip()]
    assert sink.seen, "every input yields at least one result or one invalid report"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        assert len(sink.seen) == 1  # a UTF-16 file is refused whole, at line 1
    else:
        assert len(sink.seen) == max(len(nonblank), 1)


def _plain_lines(data: bytes, limit: int) -> list[bytes | int]:
    # The reference reading: split on newlines; a line over the cap becomes its line number.
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [n if len(line) > limit else line for n, line in enumerate(lines, 1)]


@settings(max_examples=400, deadline=None)
@given(
    chunks=st.lists(
        st.one_of(st.binary(max_size=12), st.sampled_from([b"\n", b"\r\n", b"\xef\xbb\xbf"])),
        max_size=12,
    ),
    chunk_bytes=st.integers(min_value=1, max_value=9),
    limit=st.integers(min_value=1, max_value=10),
)
@pytest.mark.slow
def test_batched_reading_agrees_with_a_plain_split(
    chunks: list[bytes], chunk_bytes: int, limit: int
) -> None:
    data = b"".join(chunks)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return  # refused whole: covered by test_a_utf16_file_is_refused_with_the_fix
    batches = read_batches(io.BytesIO(data), max_line_bytes=limit, chunk_bytes=chunk_bytes)
    got = [
        item.line if isinstance(item, InvalidLine) else item for batch in batches for item in batch
    ]
    assert got == _plain_lines(data, limit)


# --- a key given twice ------------------------------------------------------------------------

_PROVEN = {
    "task_id": "t-dup",
    "outcome": "The page shows the new plan",
    "target": "https://example.com/",
    "claimed_status": "done",
    "report": "Merged and confirmed.",
    "proof": [
        {
            "kind": "http_contains",
            "ref": "https://example.com/",
            "expect": "Team plan",
            "checked_by": "runner",
            "result": "pass",
        }
    ],
}
# The attack from the field: keys put in front of a proven receipt's own; msgspec keeps the last.
_FRONTED = b'{"verdict":"failed","claimed_status":"failed",' + orjson.dumps(_PROVEN)[1:]
_NESTED = orjson.dumps(_PROVEN).replace(b'"result":"pass"', b'"result":"fail","result":"pass"')


@pytest.mark.parametrize("line", [_FRONTED, _NESTED])
@pytest.mark.parametrize("decode", [decode_line, decode_receipt])
def test_a_key_given_twice_is_an_invalid_line_naming_it(line: bytes, decode: Any) -> None:
    out = decode(7, line)
    assert isinstance(out, InvalidLine) and out.line == 7
    key = "claimed_status" if line is _FRONTED else "result"
    assert f"'{key}' appears twice" in out.reason and "give it once" in out.reason


def test_the_checker_pipeline_refuses_a_key_given_twice_and_grades_the_rest() -> None:
    data = orjson.dumps(_PROVEN) + b"\n" + _FRONTED + b"\n"
    sink = _Collect()
    card = check_stream(io.BytesIO(data), sink)
    assert [(line, record.task_id) for line, record, _ in sink.tasks] == [(1, "t-dup")]
    assert [(i.line, "'claimed_status' appears twice" in i.reason) for i in sink.invalids] == [
        (2, True)
    ]
    assert card.done_claimed == 1 and card.done_proven == 1
