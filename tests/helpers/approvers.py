"""Approver keys for the approval gate's tests: each person's private key apart from the
directory of public keys the runner trusts (LANDED_RUNNER_APPROVERS)."""

from __future__ import annotations

from pathlib import Path

from landed.signing import KeyPair
from landed.temporal.approver_keys import approver_file_name

#: The people the approval tests decide as.
PEOPLE = ("dana", "erin", "frank", "gail", "hal", "ivy", "jo", "kim", "lee", "mo", "nia")


def approver_keys(tmp_path: Path, names: tuple[str, ...] = PEOPLE) -> tuple[Path, dict[str, Path]]:
    """A directory of trusted .pub files (one per name) and each person's .key file."""
    trusted = tmp_path / "approvers-trusted"
    private: dict[str, Path] = {}
    for name in names:
        key = KeyPair.generate()
        own, public = key.save(tmp_path / f"approver-{name}", approver_file_name(name, key.key_id))
        trusted.mkdir(exist_ok=True)
        (trusted / public.name).write_bytes(public.read_bytes())
        private[name] = own
    return trusted, private
