"""The runner's approver keys (GOV-5), read from its own settings at start: which public key
stands for which person, the groups a task may name, and the actor identities that never
approve. Nothing here comes from the task or the actor: only the runner's operator sets these.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from landed.governance.approvers import APPROVERS_SETTING, is_actor
from landed.signing import KeyPair, SigningError, key_id_of, load_public_key
from landed.task.trust import ApproverKey, ApproverTrust
from landed.temporal.settings import RunnerSettings

__all__ = ["approver_file_name", "load_approvers"]

# What `landed keys new --role approver --name NAME` writes: the name, then the key id.
_FILE = re.compile(r"^approver-(?P<name>.+)-(?P<kid>[0-9a-f]{16})\.pub$")


def approver_file_name(name: str, key_id: str) -> str:
    """The stem of an approver's key files (``.key`` and ``.pub``)."""
    return f"approver-{name}-{key_id}"


def _named(path: Path) -> ApproverKey:
    """A key file that names its approver (approver-NAME-KEYID.pub)."""
    found = _FILE.match(path.name)
    if found is None:
        raise SigningError(
            f"{APPROVERS_SETTING}: {path.name} does not say whose key it is; name it "
            "approver-NAME-KEYID.pub (as `landed keys new --role approver` does) or give "
            "NAME=PATH"
        )
    return _entry(found["name"], path, expect=found["kid"])


def _entry(name: str, path: Path, expect: str | None = None) -> ApproverKey:
    key = load_public_key(path)
    if expect is not None and key_id_of(key) != expect:
        raise SigningError(
            f"{APPROVERS_SETTING}: {path} holds key {key_id_of(key)}, not the {expect} its name "
            "says; keep the file name `landed keys new` gave it"
        )
    pem = key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return ApproverKey(name=name.strip(), pem=pem.decode())


def _read(entry: str) -> list[ApproverKey]:
    name, sep, where = entry.partition("=")
    path = Path(where if sep else entry).expanduser()
    if not path.exists():
        raise SigningError(f"{APPROVERS_SETTING}: {path} does not exist")
    if path.is_dir():
        found = sorted(path.glob("*.pub"))
        if not found:
            raise SigningError(f"{APPROVERS_SETTING}: {path} holds no .pub files")
        return [_entry(name, p) if sep else _named(p) for p in found]
    return [_entry(name, path) if sep else _named(path)]


def load_approvers(settings: RunnerSettings, verifier_keys: Iterable[str] = ()) -> ApproverTrust:
    """The approver configuration for the runner's routing; SigningError names a bad entry.
    A key the verifier or the runner's head signer holds is refused: a role that signs other
    things never also approves."""
    keys = [key for entry in settings.approvers for key in _read(entry)]
    others = set(verifier_keys)
    if settings.head_key is not None:
        others.add(KeyPair.load(settings.head_key).key_id)
    for group, members in settings.approver_groups.items():
        if not members:
            raise SigningError(
                f"LANDED_RUNNER_APPROVER_GROUPS: group {group!r} has nobody in it; list its "
                "approvers' names"
            )
    actors = [a for a in (settings.actor_identity, os.environ.get("LANDED_ACTOR_IDENTITY")) if a]
    trust = ApproverTrust(keys=keys, groups=dict(settings.approver_groups), actor_identities=actors)
    for kid, (name, _) in trust.public_keys().items():
        if kid in others:
            raise SigningError(
                f"{APPROVERS_SETTING}: {name!r}'s key {kid} is the verifier's or the runner's "
                "own key; an approver needs a key of its own (`landed keys new --role approver`)"
            )
        if is_actor(name, actors):
            raise SigningError(
                f"{APPROVERS_SETTING}: {name!r} is the actor's identity; the actor never "
                "approves. Give the key to a person's name"
            )
    return trust
