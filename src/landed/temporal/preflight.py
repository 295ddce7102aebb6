"""What a role checks before it connects, without connecting: ``landed worker ROLE --check``
runs it in the image and the pod's environment, so a bad setting is named before a rollout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from landed.probes.sources import load_registry
from landed.temporal import registry as roles
from landed.temporal.role_setup import (
    RoleError,
    actor_env_problems,
    check_settings,
    private_to_owner,
    read_pems,
    settings_for,
)
from landed.temporal.settings import ActorSettings, RunnerSettings, VerifierSettings

__all__ = ["preflight", "refuse_actor_env"]


def refuse_actor_env(environ: Mapping[str, str]) -> None:
    """Raise RoleError naming the other roles' secrets in the actor's environment, if any."""
    if names := actor_env_problems(environ):
        raise RoleError(
            f"the actor's environment holds {', '.join(names)}: the verifier's sources and key "
            "and the runner's ledger must not be where an act can read them (DOD-2); start the "
            "actor without them (`landed dev` does)"
        )


def preflight(role: str) -> dict[str, Any]:
    """Everything a role checks before it connects, without connecting: its settings, the
    actor's environment, the verifier's sources and key, the runner's trust and head key.
    The role's public view when all hold; raises (RoleError, SigningError, ...) naming what
    to fix otherwise. What an image's or a pod's configuration is checked with."""
    from os import environ

    from landed.signing import KeyPair

    if role == "actor":
        refuse_actor_env(environ)
    settings = settings_for(role)
    check_settings(settings)
    view = settings.public_view()
    if isinstance(settings, ActorSettings):
        view["acts"] = sorted(roles.actor_acts(settings.acts))
    if isinstance(settings, VerifierSettings):
        view["sources"] = sorted(load_registry(role="verifier", allow_unsourced=False).names())
        assert settings.signing_key is not None  # check_settings
        private_to_owner(settings.signing_key)
        view["key_id"] = KeyPair.load(settings.signing_key).key_id
    if isinstance(settings, RunnerSettings):
        view["trusted_keys"] = len(read_pems(settings.trust))
    return view
