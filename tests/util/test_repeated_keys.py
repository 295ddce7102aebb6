"""The duplicate-key prefilter: it may say "maybe" too often, never "no" wrongly."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from landed.util import strictjson
from landed.util._dupscan import may_repeat_keys

KEYS = st.sampled_from(["a", "b", "task_id", "verdict", "é", "a b", ""])
SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=8)


def _objects(children: Any) -> Any:
    pairs = st.lists(st.tuples(KEYS, children), max_size=5)
    return pairs.map(lambda kv: ("obj", kv))


TREES = st.recursive(SCALARS, lambda c: st.lists(c, max_size=3) | _objects(c), max_leaves=20)


def _text(tree: Any, space: str) -> str:
    """JSON text with pairs as given, repeats included (json.dumps would merge them)."""
    if isinstance(tree, tuple) and tree[0] == "obj":
        inner = f",{space}".join(
            f"{json.dumps(k)}{space}:{space}{_text(v, space)}" for k, v in tree[1]
        )
        return "{" + inner + "}"
    if isinstance(tree, list):
        return "[" + f",{space}".join(_text(v, space) for v in tree) + "]"
    return json.dumps(tree)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(TREES, st.sampled_from(["", " ", "\n "]))
def test_no_repeat_is_only_said_of_text_without_one(tree: Any, space: str) -> None:
    data = _text(tree, space).encode()
    try:
        strictjson.loads(data)
        repeats = False
    except strictjson.DuplicateKey:
        repeats = True
    if repeats:
        assert may_repeat_keys(data), data
    assert strictjson.repeated_key_problem(data) is None or repeats


@pytest.mark.parametrize(
    ("text", "maybe"),
    [
        (b'{"a":1,"a":2}', True),
        (b'{"a":1,"b":{"a":2}}', False),  # one key per object: same name at two levels is fine
        (b'{"a":[{"b":1},{"b":2}]}', False),
        (b'{"a":1,"b":{"c":2,"c":3}}', True),
        (b'{"a":"x\\"y","b":1}', False),  # an escape in a value is followed, not a key
        (b'{"a":1,"\\u0061":2}', True),  # two spellings of one key: checked the exact way
        (b'{"a":"\\\\","a":2}', True),
        (b"[" * 100 + b"]" * 100, True),  # deeper than the scanner tracks: "maybe"
    ],
)
def test_known_shapes(text: bytes, maybe: bool) -> None:
    assert may_repeat_keys(text) is maybe


def test_the_exact_check_names_a_key_given_with_two_spellings() -> None:
    problem = strictjson.repeated_key_problem(b'{"a":1,"\\u0061":2}')
    assert problem is not None and "'a' appears twice" in problem and "give it once" in problem


def test_too_deep_to_check_is_a_problem_not_a_pass() -> None:
    deep = b'{"a":' * 50_000 + b"1" + b"}" * 50_000
    problem = strictjson.repeated_key_problem(deep)
    assert problem is not None and "too deeply" in problem
