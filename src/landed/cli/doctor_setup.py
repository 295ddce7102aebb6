"""``landed doctor``'s checks of what the settings point at: the ledger (it opens, its schema is
current, by the ledger's own schema check), the verifier's signing key, the runner's trusted
keys (and whether they hold the verifier's), and the verifier's named sources.

A setting left unset falls back to what ``landed dev --dir DIR`` uses: ``DIR/ledger.db`` and
the key pair under ``DIR/keys``."""

from __future__ import annotations

from pathlib import Path

from landed.cli.doctor_check import Check, bounded, first_line

__all__ = ["ledger_check", "signing_checks"]

_DEV_KEYS = "start `landed dev` once (it makes a key pair under --dir)"


def _ledger_fix(url: str, report: dict[str, object]) -> str:
    if url.startswith(("postgresql://", "postgres://")):
        return str(report["run"])
    if report["status"] == "missing":
        return (
            "start `landed dev` (its runner creates it) or run `landed ledger init`; or point "
            "LANDED_LEDGER_URL (or --ledger) at the ledger you use"
        )
    return f"start the runner once: {report['run']}"


async def ledger_check(url: str, timeout: float) -> Check:
    """The ledger at ``url`` has landed's schema and opens without creating anything."""
    from landed.ledger.factory import open_ledger
    from landed.ledger.schema_check import schema_report

    try:
        report = await bounded(schema_report(url), timeout, "the ledger")
        if report["status"] != "current":
            found, needs = report["found"], report["needs"]
            detail = (
                f"{report['where']}: schema {report['status']} (version {found}, needs {needs})"
            )
            return Check.problem("ledger", detail, _ledger_fix(url, report))
        ledger = await bounded(open_ledger(url, create=False), timeout, "the ledger")
        await ledger.close()
    except Exception as exc:
        return Check.problem(
            "ledger",
            f"cannot open it: {first_line(exc)}",
            "check LANDED_LEDGER_URL (or --ledger): the server up, the login allowed, the path "
            "right",
        )
    return Check.passed("ledger", f"{report['where']} opens; schema version {report['needs']}")


def _key_files(setting: list[Path], home: Path, pattern: str) -> tuple[list[Path], str]:
    """The files a setting names (else landed dev's under ``home/keys``) and where they came
    from."""
    if setting:
        return setting, "the setting"
    keys = home / "keys"
    return (sorted(keys.glob(pattern)) if keys.is_dir() else []), f"{keys} (landed dev's)"


def _signing_key(key: Path | None, home: Path) -> tuple[Check, str | None]:
    """The verifier's key check, and its key id when it loads."""
    from landed.signing import KeyPair
    from landed.temporal.role_setup import private_to_owner

    name = "signing key"
    files, origin = _key_files([key] if key else [], home, "landed-*.key")
    if not files:
        missing = Check.problem(
            name,
            f"LANDED_VERIFIER_SIGNING_KEY is not set and {origin} holds no key",
            f"{_DEV_KEYS}, or `landed keys new --out DIR` and set "
            "LANDED_VERIFIER_SIGNING_KEY=DIR/landed-<key id>.key",
        )
        return missing, None
    try:
        private_to_owner(files[0])
        pair = KeyPair.load(files[0])
    except Exception as exc:
        fix = "point LANDED_VERIFIER_SIGNING_KEY at the verifier's PEM Ed25519 private key"
        return Check.problem(name, first_line(exc), fix), None
    return Check.passed(name, f"{files[0]} (key id {pair.key_id}, from {origin})"), pair.key_id


def _trust(trust: list[Path], home: Path, key_id: str | None) -> Check:
    from landed.signing import TrustStore

    name = "trusted keys"
    files, origin = _key_files(trust, home, "landed-*.pub")
    if not files:
        return Check.problem(
            name,
            f"LANDED_RUNNER_TRUST is not set and {origin} holds no public key: the runner would "
            "trust no reading",
            f"{_DEV_KEYS}, or set LANDED_RUNNER_TRUST to the verifier's landed-<key id>.pub",
        )
    try:
        store = TrustStore.load(files)
    except Exception as exc:
        fix = "point LANDED_RUNNER_TRUST at the verifiers' .pub files (or their directory)"
        return Check.problem(name, first_line(exc), fix)
    if key_id is not None and key_id not in store:
        return Check.problem(
            name,
            f"the runner trusts {', '.join(sorted(store))} but not the verifier's key {key_id}: "
            "every reading would count as unsigned",
            f"add the verifier's landed-{key_id}.pub to LANDED_RUNNER_TRUST",
        )
    return Check.passed(name, f"{len(store)} key(s) from {origin}")


def signing_checks(home: Path) -> list[Check]:
    """The verifier's signing key and the runner's trusted keys, where the settings say."""
    from pydantic import ValidationError

    from landed.probes.settings import settings_problems
    from landed.temporal.settings import RunnerSettings, VerifierSettings

    try:
        verifier, runner = VerifierSettings(), RunnerSettings()
    except ValidationError as exc:
        problem = settings_problems(exc)
        return [Check.problem("signing key", problem, "fix the setting named above")]
    key_check, key_id = _signing_key(verifier.signing_key, home)
    return [key_check, _trust(list(runner.trust), home, key_id)]
