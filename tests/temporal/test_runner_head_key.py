"""The runner's head key is its own: a missing file, or the verifier's key, is refused before the
runner connects to anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from landed.signing import KeyPair
from landed.temporal.role_setup import RoleError, check_settings
from landed.temporal.settings import RunnerSettings


def test_the_runner_refuses_the_verifiers_key_or_a_missing_one_as_its_head_key(
    tmp_path: Path,
) -> None:
    verifier_key, verifier_pub = KeyPair.generate().save(tmp_path / "verifier")
    head_key, _ = KeyPair.generate().save(tmp_path / "head")
    check_settings(RunnerSettings(trust=[verifier_pub], head_key=head_key, head_every=5))
    with pytest.raises(RoleError, match="is the verifier's key") as err:
        check_settings(RunnerSettings(trust=[verifier_pub], head_key=verifier_key))
    assert "landed keys new" in str(err.value)
    with pytest.raises(RoleError, match=r"LANDED_RUNNER_HEAD_KEY: cannot read .*nope\.key"):
        check_settings(RunnerSettings(trust=[verifier_pub], head_key=tmp_path / "nope.key"))
    with pytest.raises(ValueError, match="head_every"):
        RunnerSettings(trust=[verifier_pub], head_every=0)
