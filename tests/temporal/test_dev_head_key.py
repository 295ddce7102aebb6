"""`landed dev` gives the runner a chain-head key of its own, made once in the state dir."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from landed.dev.stack import DevStack
from landed.signing import KeyPair, load_public_key


def test_the_runner_gets_its_own_head_key_made_once_and_the_others_do_not(
    tmp_path: Path,
) -> None:
    stack = DevStack(home=tmp_path / ".landed", base_env={})
    fake_server: Any = SimpleNamespace(address="127.0.0.1:7233")
    stack.server = fake_server
    runner = stack.role_environment("runner")
    head_key = Path(runner["LANDED_RUNNER_HEAD_KEY"])
    assert head_key.parent == (tmp_path / ".landed" / "head-keys").resolve()
    assert stack.head_keys() == (head_key, head_key.with_suffix(".pub"))  # reused, not remade
    verifier_key, _ = stack.keys()
    assert KeyPair.load(head_key).key_id != KeyPair.load(verifier_key).key_id
    load_public_key(head_key.with_suffix(".pub"))
    for role in ("actor", "verifier"):
        assert not any("HEAD_KEY" in k for k in stack.role_environment(role)), role
