"""A canary secret configured as a credential must appear nowhere: not in the Observation JSON,
not in CLI output, not in log records."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.http import LocalHTTP, Request, Response
from hypothesis import given
from hypothesis import strategies as st

from landed.probes.contract import CommandProbe, Contains, Count, HttpProbe, NonEmpty, RecordProbe
from landed.probes.observe import observe
from landed.probes.reading import Capture, make_evidence
from landed.probes.sources import SourceRegistry
from landed.util.redact import _HINTS, _HINTS_LOWER, REDACTED, Redactor, escape_for_humans

CANARY = "canary-7f3a9c1e5d"
LANDED = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "landed")


def echo_headers(req: Request) -> Response:
    lines = "".join(f"{k}: {v}\n" for k, v in sorted(req.headers.items()))
    return Response(
        200, f"you sent:\n{lines}token={req.headers.get('authorization', '')}\n".encode()
    )


@pytest.fixture
def server() -> Iterator[LocalHTTP]:
    srv = LocalHTTP().start()
    srv.routes["/echo"] = echo_headers
    srv.routes["/json"] = lambda req: Response(
        200,
        (
            json.dumps(
                {
                    "auth": req.headers.get("authorization"),
                    "Authorization": req.headers.get("authorization"),
                }
            )
        ).encode(),
    )
    yield srv
    srv.stop()


def test_redactor_patterns() -> None:
    r = Redactor([CANARY])
    assert r(f"x {CANARY} y") == f"x {REDACTED} y"
    odd = Redactor(["p@ss/w0rd!x"])
    assert odd("sent p%40ss%2Fw0rd%21x along") == f"sent {REDACTED} along"
    assert odd('{"pw": "p@ss/w0rd!x"}') == '{"pw": "' + REDACTED + '"}'
    assert r("Authorization: Basic dXNlcjpwYXNz") == f"Authorization: {REDACTED}"
    assert r("curl -H 'Bearer abcdefghijkl'") == f"curl -H 'Bearer {REDACTED}'"
    assert r("postgresql://app:s3cret-pw@db/x") == f"postgresql://app:{REDACTED}@db/x"
    assert r("host=db password=s3cret user=x") == f"host=db password={REDACTED} user=x"
    assert r('{"Authorization": "Token abc"}') == '{"Authorization": "' + REDACTED + '"}'
    assert Redactor(["ab"])("ab") == "ab"  # too short to be a secret worth hiding


def test_a_secret_straddling_the_evidence_cap_is_redacted_whole() -> None:
    r = Redactor([CANARY])
    data = b"x" * 95 + CANARY.encode() + b"tail"
    ev = make_evidence(Capture.of(data), 100, r)
    assert CANARY[:5] not in ev.text
    assert ev.truncated


@pytest.mark.parametrize(
    "written",
    [
        "p@ss/w0rd%2BKey%3DZz9",  # a query encoder that keeps @ and / (yarl, aiohttp)
        "p%40ss/w0rd%2BKey%3DZz9",  # quote() with its default safe "/"
        "p%40ss%2fw0rd%2bKey%3dZz9",  # lower-case escapes
        "p@ss\\/w0rd+Key=Zz9",  # JSON that escapes slashes
    ],
)
def test_a_secret_is_redacted_however_an_encoder_wrote_it(written: str) -> None:
    r = Redactor(["p@ss/w0rd+Key=Zz9"])
    assert r(f"key={written}&x=1") == f"key={REDACTED}&x=1"
    spaced = Redactor(["my secret value"])
    assert spaced("a my+secret+value b my%20secret%20value") == f"a {REDACTED} b {REDACTED}"
    # A URL's password registered as written there (p%40ss...) also matches decoded.
    assert Redactor(["p%40ssw0rd"])("user p@ssw0rd") == f"user {REDACTED}"


@pytest.mark.parametrize("cap", [7, 60, 200, 2048])
def test_a_secret_cut_off_by_the_redaction_window_never_shows(cap: int) -> None:
    """Redacting shortens the text, so the window redacted past the cap could end up shorter
    than the cap and show its own end: a secret the window cut in half."""
    token = "ghp_" + "a1b2c3d4e5" * 10
    data = (f"auth ok for {token}\n" * 1000).encode()
    ev = make_evidence(Capture.of(data, keep=len(data)), cap, Redactor([token]))
    assert not any(token[:k] in ev.text for k in range(6, len(token) + 1)), ev.text[-120:]
    assert len(ev.text.encode()) == cap and ev.truncated


def test_escape_for_humans() -> None:
    assert escape_for_humans("a\x1b[31mb\x00c\n\td") == "a\\x1b[31mb\\x00c\n\td"


async def test_http_token_never_reaches_the_observation(
    server: LocalHTTP, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sources = {
        "psp": {"url": server.base, "token": CANARY, "headers": {"X-Api-Key": CANARY + "-k"}}
    }
    async with SourceRegistry(sources) as registry:
        observations = [
            await observe(
                HttpProbe(source="psp", url="/echo"),
                Contains(value="authorization"),
                registry=registry,
                observer="v",
            ),
            await observe(
                HttpProbe(source="psp", url="/json"), NonEmpty(), registry=registry, observer="v"
            ),
            await observe(
                HttpProbe(source="psp", url="/echo"),
                Contains(value=CANARY),
                registry=registry,
                observer="v",
            ),
        ]
    assert server.requests[0].headers["authorization"] == f"Bearer {CANARY}"  # it was sent
    for obs in observations:
        # What was read from the source (evidence, value, message) never shows the token.
        dumped = obs.model_dump_json(exclude={"expectation"})
        assert CANARY not in dumped, dumped
    # The label is the plan's own text, carried as written so the workflow can hold the
    # reading to its step: a plan that names a secret has published it already (the receipt
    # carries the plan's expectation), and hiding it made that step unverifiable.
    assert observations[2].expectation == f'contains("{CANARY}")'
    assert observations[0].outcome.value == "pass"
    assert all(CANARY not in rec.getMessage() for rec in caplog.records)


async def test_database_password_never_reaches_the_observation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    sources = {"db": {"url": f"postgresql://reader:{CANARY}@127.0.0.1:1/test"}}
    async with SourceRegistry(sources) as registry:
        obs = await observe(
            RecordProbe(source="db", query="select 1", timeout_s=2),
            Count(value=1),
            registry=registry,
            observer="v",
        )
    assert obs.outcome.value == "probe-error"
    assert CANARY not in obs.model_dump_json()
    assert all(CANARY not in rec.getMessage() for rec in caplog.records)


async def test_command_env_secret_never_reaches_the_observation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    sources = {"cli": {"kind": "command", "env": {"API_TOKEN": CANARY}}}
    script = 'echo "token is $API_TOKEN"; echo "failed with $API_TOKEN" >&2; exit 1'
    async with SourceRegistry(sources) as registry:
        obs = await observe(
            CommandProbe(source="cli", argv=[script], shell=True),
            NonEmpty(),
            registry=registry,
            observer="v",
        )
    assert obs.outcome.value == "probe-error"
    assert "failed with [redacted]" in obs.message
    assert CANARY not in obs.model_dump_json()
    assert all(CANARY not in rec.getMessage() for rec in caplog.records)


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LANDED_")} | env
    return subprocess.run([LANDED, *args], capture_output=True, text=True, env=full, timeout=60)


@pytest.mark.slow
def test_cli_output_never_shows_the_canary(server: LocalHTTP, tmp_path: Path) -> None:
    env = {"LANDED_SOURCES__PSP__URL": server.base, "LANDED_SOURCES__PSP__TOKEN": CANARY}
    for extra in ([], ["--json"]):
        done = run_cli(
            "verify",
            "--http",
            "/echo",
            "--source",
            "psp",
            "--contains",
            "authorization",
            *extra,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert CANARY not in done.stdout + done.stderr
        assert "[redacted]" in done.stdout
    passed = run_cli(
        "verify",
        "--probe",
        "sh -c 'echo $MY_TOKEN'",
        "--env",
        "MY_TOKEN",
        "--contains",
        "x",
        env={"MY_TOKEN": CANARY},
    )
    assert passed.returncode == 1
    assert CANARY not in passed.stdout + passed.stderr


@pytest.mark.slow
def test_guard_output_never_shows_the_canary(server: LocalHTTP, tmp_path: Path) -> None:
    contracts = tmp_path / "c.jsonl"
    contracts.write_text(
        '{"action": "a", "probe": {"kind": "http", "source": "psp", "url": "/echo"}, '
        '"expect": {"type": "contains", "value": "never there"}}\n'
    )
    env = {"LANDED_SOURCES__PSP__URL": server.base, "LANDED_SOURCES__PSP__TOKEN": CANARY}
    done = run_cli("guard", "--contracts", str(contracts), "--json", env=env)
    assert done.returncode == 2
    assert CANARY not in done.stdout + done.stderr


@given(
    st.lists(
        st.sampled_from(["AUTH", "Api_Key", "apikey", "CoOkIe", "BEARER", "Basic", "://", "PaSs"])
        | st.text(alphabet=st.characters(max_codepoint=127), max_size=8),
        max_size=6,
    ).map("".join)
)
def test_the_ascii_fast_look_finds_what_the_case_insensitive_look_finds(text: str) -> None:
    # Redactor skips redaction when the first look finds nothing: the faster look used for
    # ASCII text must never miss what the case-insensitive pattern finds.
    assert bool(_HINTS_LOWER.search(text.lower())) == bool(_HINTS.search(text))


def test_hostile_text_is_redacted_in_linear_time() -> None:
    """Text built to make a URL pattern backtrack ("a.a.a..."): quadratic before, 18.8 s for
    64 KB on this machine; linear now (0.02 s). The bound is a guard with a 100x margin, not a
    speed figure (those live in bench/)."""
    import time

    redact = Redactor([])
    text = "token " + "a." * 32768
    started = time.process_time()
    assert redact(text) == text
    assert time.process_time() - started < 2.0
    assert redact("dsn postgresql://u:pw9@db/x") == "dsn postgresql://u:[redacted]@db/x"


def test_the_start_of_a_secret_a_message_cut_short_is_redacted_too() -> None:
    key = "K" * 20 + "abcdefghijklmnopqrstuvwxyz0123456789" * 2 + "ZZ"
    redact = Redactor([key])
    shown = redact(f'the probe returned $.echo = "{key[:65]}..."; expected == {{}}')
    assert key[:_MIN_CUT_SEEN] not in shown, shown
    assert shown == 'the probe returned $.echo = "[redacted]..."; expected == {}', shown
    # Text that merely ends in "..." and shares a few characters with a secret is left alone.
    assert redact("KKKKKKK... and abc...") == "KKKKKKK... and abc..."


_MIN_CUT_SEEN = 8


async def test_an_expectation_naming_a_verifier_secret_is_judged_under_the_plans_label() -> None:
    """APP_ENV=production is a secret of this command source; a plan step expecting the text
    "production" is still held to, and judged under, its own label."""
    from landed.probes.expect import label_for

    sources = {"sh": {"kind": "command", "commands": ["printf"], "env": {"APP_ENV": "production"}}}
    async with SourceRegistry(sources) as registry:
        for argv, expect in (
            (["printf", "deployed to production"], Contains(value="production")),
            (["printf", "GET /reset?token=abc"], Contains(value="?token=")),
        ):
            probe = CommandProbe(source="sh", argv=argv)
            obs = await observe(probe, expect, registry=registry, observer="v")
            assert obs.outcome.value == "pass", obs
            assert obs.expectation == label_for(probe, expect)


@pytest.mark.slow
def test_a_long_secret_compiles_and_its_cut_start_is_redacted() -> None:
    """A PEM key or a long JWT is an ordinary credential; the cut-prefix pattern must compile
    for it (one nested group per character exceeded the compiler's recursion before)."""
    pem = "-----BEGIN PRIVATE KEY-----" + "M" * 1700
    redact = Redactor([pem, "j" * 5000])
    assert redact(f"key {pem[:60]}...") == "key [redacted]..."
    assert redact(f"whole {pem} here") == "whole [redacted] here"
    token = "t" * 1503
    assert token not in redact(f"https://oauth2:{token}@git.example/x")


def test_a_secret_cut_in_the_middle_is_redacted_at_both_ends() -> None:
    key = "K" * 20 + "abcdefghijklmnopqrstuvwxyz0123456789" * 2 + "ZZ"
    redact = Redactor([key])
    # pydantic shows a long input as start...end
    assert (
        redact(f"input_value='{key[:20]}...{key[-24:]}'") == "input_value='[redacted]...[redacted]'"
    )
    assert redact("plain ... text ...abc and ...ZZ") == "plain ... text ...abc and ...ZZ"
