"""How landed reaches Temporal: Temporal's own environment configuration, checked before use."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from typing import Any

from temporalio.envconfig import ClientConfigProfile
from temporalio.service import TLSConfig

__all__ = ["ConnectionSettingsError", "connect_options", "worker_identity"]


def worker_identity(role: str) -> str:
    """``role@host:pid``: who did what, as it appears in history and on receipts."""
    return f"{role}@{socket.gethostname()}:{os.getpid()}"


class ConnectionSettingsError(ValueError):
    """Temporal's environment configuration (profile, TOML file, TLS files) cannot be used."""


def connect_options(
    *,
    address: str | None = None,
    namespace: str | None = None,
    profile: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Connection settings from Temporal's own environment configuration.

    TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE and
    the TOML file named by TEMPORAL_CONFIG_FILE apply exactly as for the ``temporal`` CLI, so the
    same worker reaches a dev server, a cluster or Temporal Cloud unchanged. Explicit arguments
    win over the environment.
    """
    try:
        prof = ClientConfigProfile.load(profile=profile, override_env_vars=env)
        opts: dict[str, Any] = dict(prof.to_client_connect_config())
    except Exception as exc:
        # The first line only: a TOML parse error goes on to quote the file, secrets and all.
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConnectionSettingsError(
            f"Temporal's connection settings cannot be loaded: {first}; check TEMPORAL_PROFILE, "
            "TEMPORAL_CONFIG_FILE, TEMPORAL_TLS_* and TEMPORAL_API_KEY"
        ) from None
    _check_connection_material(opts)
    opts.setdefault("target_host", "localhost:7233")
    opts.setdefault("namespace", "default")
    if address:
        opts["target_host"] = address
    if namespace:
        opts["namespace"] = namespace
    return opts


# gRPC metadata: a name of these characters (sent lowercased); a text value of visible ASCII,
# space and tab (a name ending in -bin carries binary and is encoded by the client).
_HEADER_NAME = re.compile(r"[0-9A-Za-z_.-]+")
_HEADER_TEXT = re.compile(r"[\t\x20-\x7e]*")


def _check_connection_material(opts: Mapping[str, Any]) -> None:
    """Refuse TLS files and headers the connection would fail on, before connecting.

    The client reports them only as a failed connection, which reads like a server that is not
    there; here the message names the setting. Values are never quoted: they may be secrets.
    """
    tls = opts.get("tls")
    if isinstance(tls, TLSConfig):
        _check_tls(tls)
    _check_headers(dict(opts.get("rpc_metadata") or {}), opts.get("api_key"))


def _check_tls(tls: TLSConfig) -> None:
    checks = (
        (tls.server_root_ca_cert, "server CA certificate", "SERVER_CA_CERT", _pem_certs),
        (tls.client_cert, "client certificate", "CLIENT_CERT", _pem_certs),
        (tls.client_private_key, "client private key", "CLIENT_KEY", _pem_key),
    )
    for data, what, setting, parse in checks:
        if data is None:
            continue
        problem = parse(data)
        if problem:
            raise ConnectionSettingsError(
                f"the TLS {what} cannot be used: {problem}; point "
                f"TEMPORAL_TLS_{setting}_PATH (or _DATA, or the profile's tls section) at a "
                f"PEM file"
            )
    if (tls.client_cert is None) != (tls.client_private_key is None):
        raise ConnectionSettingsError(
            "the TLS client certificate and private key come as a pair, and only one is "
            "set; set both TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH "
            "(or their _DATA forms), or neither"
        )


def _check_headers(metadata: Mapping[Any, Any], api_key: Any) -> None:
    for name, value in metadata.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise ConnectionSettingsError(
                f"the gRPC header name {name!r} is not valid (letters, digits, '-', '_' and '.' "
                "only); fix TEMPORAL_GRPC_META_* or the profile's grpc_meta"
            )
        if not name.endswith("-bin") and not (
            isinstance(value, str) and _HEADER_TEXT.fullmatch(value)
        ):
            raise ConnectionSettingsError(
                f"the gRPC header {name!r} has a value with a control or non-ASCII character; "
                "fix TEMPORAL_GRPC_META_* or the profile's grpc_meta (the value is not shown)"
            )
    if api_key is not None and not (isinstance(api_key, str) and _HEADER_TEXT.fullmatch(api_key)):
        raise ConnectionSettingsError(
            "the Temporal API key has a control or non-ASCII character (a stray newline?); fix "
            "TEMPORAL_API_KEY or the profile's api_key (the key is not shown)"
        )


def _pem_certs(data: bytes) -> str | None:
    """None for PEM data holding at least one certificate, else what is wrong with it."""
    from cryptography import x509

    try:
        x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        return f"no PEM certificate could be read from it ({str(exc).splitlines()[0]})"
    return None


def _pem_key(data: bytes) -> str | None:
    """None for an unencrypted PEM private key, else what is wrong with it."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    try:
        serialization.load_pem_private_key(data, password=None)
    except TypeError:
        return "it is encrypted, and the connection cannot ask for its password; decrypt it"
    except (ValueError, UnsupportedAlgorithm):
        return "it is not a PEM private key"
    return None
