"""HTTP-read probes against a real HTTP server on 127.0.0.1: http, provider objects, payments,
deployments, sent and call logs, and pull-request URLs."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from helpers.http import LocalHTTP, Request, Response, repeat

from landed.probes.contract import (
    CallLogProbe,
    Contains,
    Count,
    DeploymentProbe,
    Equals,
    GitProbe,
    HttpProbe,
    JsonPath,
    NonEmpty,
    Observation,
    Outcome,
    PaymentProbe,
    ProviderObjectProbe,
    RungAtLeast,
    SentLogProbe,
    probe_problem,
)
from landed.probes.observe import observe
from landed.probes.sources import SourceRegistry


@pytest.fixture
def server() -> Iterator[LocalHTTP]:
    srv = LocalHTTP().start()
    yield srv
    srv.stop()


@pytest.fixture
async def registry(server: LocalHTTP) -> AsyncIterator[SourceRegistry]:
    sources = {
        "site": {"url": server.base},
        "psp": {"url": server.url("/api"), "token": "psp-token-123456"},
        "open": {"url": server.base, "allow_absolute_urls": True},
    }
    async with SourceRegistry(sources, allow_unsourced=True) as reg:
        yield reg


async def see(registry: SourceRegistry, probe: object, expect: object) -> Observation:
    return await observe(probe, expect, registry=registry, observer="test-verifier")


# --- http ---------------------------------------------------------------------------------------


async def test_http_contains_on_a_live_page(server: LocalHTTP, registry: SourceRegistry) -> None:
    server.route("/pricing", body=b"<h1>Team plan</h1>")
    obs = await see(registry, HttpProbe(source="site", url="/pricing"), Contains(value="Team plan"))
    assert obs.outcome is Outcome.PASS
    assert obs.evidence is not None and obs.evidence.text == "<h1>Team plan</h1>"
    missing = await see(
        registry, HttpProbe(source="site", url="/pricing"), Contains(value="Enterprise")
    )
    assert missing.outcome is Outcome.MISMATCH


async def test_http_status_is_checked(server: LocalHTTP, registry: SourceRegistry) -> None:
    obs = await see(registry, HttpProbe(source="site", url="/nowhere"), NonEmpty())
    assert obs.outcome is Outcome.MISMATCH and "HTTP 404" in obs.message
    created = await see(
        registry, HttpProbe(source="site", url="/nowhere", status=404), Contains(value="not found")
    )
    assert created.outcome is Outcome.PASS


async def test_http_json_path(server: LocalHTTP, registry: SourceRegistry) -> None:
    server.json("/status", '{"build": {"ok": true, "n": 7}}')
    probe = HttpProbe(source="site", url="/status")
    assert (
        await see(registry, probe, JsonPath(path="$.build.ok", value=True))
    ).outcome is Outcome.PASS
    assert (
        await see(registry, probe, JsonPath(path="$.build.n", op=">", value=7))
    ).outcome is Outcome.MISMATCH


async def test_http_server_errors_and_refused_credentials_observe_nothing(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    server.route("/boom", 503, b"down")
    server.route("/denied", 401, b"who are you")
    for path in ("/boom", "/denied"):
        obs = await see(registry, HttpProbe(source="site", url=path), NonEmpty())
        assert obs.outcome is Outcome.PROBE_ERROR, path


async def test_http_connection_refused_is_a_probe_error() -> None:
    async with SourceRegistry({"site": {"url": "http://127.0.0.1:1"}}, allow_unsourced=True) as reg:
        obs = await see(reg, HttpProbe(source="site", url="/"), NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR


@pytest.mark.slow
async def test_http_hanging_server_is_bounded_by_the_timeout(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    server.hang("/slow")
    started = time.monotonic()
    obs = await see(registry, HttpProbe(source="site", url="/slow", timeout_s=0.5), NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR
    assert time.monotonic() - started < 3
    assert "within 0.5s" in obs.message


@pytest.mark.slow
async def test_http_hundred_megabyte_body_is_read_bounded(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    chunk = b"\x1b[31m" + b"A" * (1024 * 1024 - 5)
    server.routes["/huge"] = lambda _req: Response(200, repeat(chunk, 100))
    obs = await see(
        registry, HttpProbe(source="site", url="/huge", timeout_s=20), Contains(value="B")
    )
    assert obs.outcome is Outcome.MISMATCH
    assert obs.evidence is not None
    assert obs.evidence.total_bytes == 100 * len(chunk)
    assert obs.evidence.truncated and len(obs.evidence.text) < 70 * 1024
    assert obs.evidence.sha256 == hashlib.sha256(chunk * 100).hexdigest()
    assert "\x1b" not in obs.evidence.text and "\\x1b[31m" in obs.evidence.text


async def test_relative_urls_cannot_climb_out_of_the_base(registry: SourceRegistry) -> None:
    obs = await see(registry, HttpProbe(source="psp", url="../admin"), NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR and ".." in obs.message
    encoded = await see(registry, HttpProbe(source="psp", url="%2e%2e/admin"), NonEmpty())
    assert encoded.outcome is Outcome.PROBE_ERROR and ".." in encoded.message


async def test_absolute_urls_under_the_base_cannot_climb_out_of_it(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    """An absolute URL on the source's own origin is read only under its base path, judged after
    decoding: '..' (plain or %2e%2e) and a sibling path that merely starts alike are outside, and
    no request (with the source's token) goes out for them."""
    server.route("/admin", body=b"secret admin page")
    server.route("/api-admin", body=b"secret admin page")
    server.route("/api/me", body=b"me")
    escapes = [
        server.url("/api/../admin"),
        server.url("/api/%2e%2e/admin"),
        server.url("/api/%2E%2e/admin"),
        server.url("/api/%252e%252e/admin"),
        server.url("/api-admin"),
    ]
    for url in escapes:
        obs = await see(registry, HttpProbe(source="psp", url=url), Contains(value="secret"))
        assert obs.outcome is Outcome.PROBE_ERROR, url
        assert "allow_absolute_urls" in obs.message, url
    assert all("admin" not in r.path for r in server.requests)
    inside = await see(
        registry, HttpProbe(source="psp", url=server.url("/api/me")), Contains(value="me")
    )
    assert inside.outcome is Outcome.PASS
    assert server.requests[-1].headers.get("authorization") == "Bearer psp-token-123456"


async def test_absolute_urls_need_the_source_to_allow_them(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    server.route("/x", body=b"ok")
    refused = await see(registry, HttpProbe(source="psp", url="http://127.0.0.2:9/x"), NonEmpty())
    assert refused.outcome is Outcome.PROBE_ERROR and "allow_absolute_urls" in refused.message
    allowed = await see(
        registry, HttpProbe(source="open", url=server.url("/x")), Contains(value="ok")
    )
    assert allowed.outcome is Outcome.PASS
    unsourced = await see(registry, HttpProbe(url=server.url("/x")), Contains(value="ok"))
    assert unsourced.outcome is Outcome.PASS


async def test_credentials_go_only_to_the_source_origin(server: LocalHTTP) -> None:
    other = LocalHTTP().start()
    try:
        other.route("/steal", body=b"thanks")
        server.route("/api/me", body=b"me")
        sources = {
            "psp": {
                "url": server.url("/api"),
                "token": "psp-token-123456",
                "allow_absolute_urls": True,
            }
        }
        async with SourceRegistry(sources, allow_unsourced=True) as reg:
            await see(reg, HttpProbe(source="psp", url="/me"), NonEmpty())
            await see(reg, HttpProbe(source="psp", url=other.url("/steal")), NonEmpty())
        assert server.requests[-1].headers.get("authorization") == "Bearer psp-token-123456"
        assert "authorization" not in other.requests[-1].headers
    finally:
        other.stop()


async def test_redirects_are_not_followed_unless_configured(server: LocalHTTP) -> None:
    other = LocalHTTP().start()
    try:
        other.route("/landing", body=b"login page")
        server.route("/go", 302, b"", Location=other.url("/landing"))
        async with SourceRegistry({"a": {"url": server.base, "token": "tok-abcdefgh"}}) as reg:
            plain = await see(reg, HttpProbe(source="a", url="/go"), Contains(value="login"))
        assert plain.outcome is Outcome.MISMATCH and "302" in plain.message
        # Followed only where the probe could have asked itself: another host's page is not a
        # reading of this source.
        cfg = {"a": {"url": server.base, "token": "tok-abcdefgh", "follow_redirects": True}}
        async with SourceRegistry(cfg, allow_unsourced=True) as reg:
            refused = await see(reg, HttpProbe(source="a", url="/go"), Contains(value="login"))
        assert refused.outcome is Outcome.PROBE_ERROR
        assert "redirected to" in refused.message and "allow_absolute_urls" in refused.message
        assert other.requests == []
        anywhere = {"a": {**cfg["a"], "allow_absolute_urls": True}}
        async with SourceRegistry(anywhere, allow_unsourced=True) as reg:
            followed = await see(reg, HttpProbe(source="a", url="/go"), Contains(value="login"))
        assert followed.outcome is Outcome.PASS
        assert "authorization" not in other.requests[-1].headers
    finally:
        other.stop()


async def test_a_redirect_out_of_the_base_path_is_refused_and_never_carries_credentials(
    server: LocalHTTP,
) -> None:
    """Same host, another path: outside the source's base, as a probe URL there would be."""
    server.route("/api/go", 302, b"", Location="/admin/export")
    server.route("/admin/export", body=b"shipped")
    base = {"url": server.url("/api"), "token": "tok-abcdefgh", "follow_redirects": True}
    async with SourceRegistry({"a": base}, allow_unsourced=True) as reg:
        refused = await see(reg, HttpProbe(source="a", url="/go"), Contains(value="shipped"))
    assert refused.outcome is Outcome.PROBE_ERROR and "redirected to" in refused.message
    assert [r.path for r in server.requests] == ["/api/go"]
    async with SourceRegistry(
        {"a": {**base, "allow_absolute_urls": True}}, allow_unsourced=True
    ) as reg:
        followed = await see(reg, HttpProbe(source="a", url="/go"), Contains(value="shipped"))
    assert followed.outcome is Outcome.PASS
    assert server.requests[-1].path == "/admin/export"
    assert "authorization" not in server.requests[-1].headers


# --- provider objects and payments --------------------------------------------------------------


async def test_provider_object_by_id(server: LocalHTTP, registry: SourceRegistry) -> None:
    server.json("/api/v1/customers/cus_1", '{"id": "cus_1", "email": "a@example.test"}')
    probe = ProviderObjectProbe(source="psp", path="/v1/customers/{id}", object_id="cus_1")
    assert (
        await see(registry, probe, JsonPath(path="$.email", value="a@example.test"))
    ).outcome is Outcome.PASS
    gone = ProviderObjectProbe(source="psp", path="/v1/customers/{id}", object_id="cus_2")
    obs = await see(registry, gone, NonEmpty())
    assert obs.outcome is Outcome.EMPTY and "404" in obs.message
    assert server.requests[-1].headers["authorization"] == "Bearer psp-token-123456"


async def test_object_ids_are_escaped_into_the_path(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    probe = ProviderObjectProbe(source="psp", path="/v1/objects/{id}", object_id="../../admin")
    await see(registry, probe, NonEmpty())
    assert server.requests[-1].path == "/api/v1/objects/..%2F..%2Fadmin"


async def test_payment_typed_fields(server: LocalHTTP, registry: SourceRegistry) -> None:
    server.json(
        "/api/payments/pay_1",
        json.dumps({"id": "pay_1", "amount": 4500, "currency": "USD", "status": "succeeded"}),
    )
    good = PaymentProbe(
        source="psp", payment_id="pay_1", amount=4500, currency="usd", status="succeeded"
    )
    obs = await see(registry, good, NonEmpty())
    assert obs.outcome is Outcome.PASS
    assert obs.expectation == 'payment(amount=4500, currency="usd", status="succeeded")'
    assert not obs.weak
    wrong = PaymentProbe(source="psp", payment_id="pay_1", amount=45, currency="usd")
    bad = await see(registry, wrong, NonEmpty())
    assert bad.outcome is Outcome.MISMATCH and "amount 4500" in bad.message
    stringly = PaymentProbe(source="psp", payment_id="pay_1", amount=4500.0)
    assert (await see(registry, stringly, Equals(value="succeeded"))).outcome is Outcome.PASS


async def test_payment_amount_as_a_string_is_not_the_amount(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    server.json(
        "/api/payments/pay_2", '{"amount": "4500", "currency": "usd", "status": "succeeded"}'
    )
    obs = await see(
        registry, PaymentProbe(source="psp", payment_id="pay_2", amount=4500), NonEmpty()
    )
    assert obs.outcome is Outcome.MISMATCH


# --- deployments --------------------------------------------------------------------------------


async def test_deployment_version_and_hash(server: LocalHTTP, registry: SourceRegistry) -> None:
    page = b"<html>v2 live</html>"
    server.json("/version", '{"version": "2.4.1"}')
    server.route("/", body=page)
    ok = await see(
        registry, DeploymentProbe(source="site", path="/version", version="2.4.1"), NonEmpty()
    )
    assert ok.outcome is Outcome.PASS and ok.value == "2.4.1"
    old = await see(
        registry, DeploymentProbe(source="site", path="/version", version="2.5.0"), NonEmpty()
    )
    assert old.outcome is Outcome.MISMATCH and "2.4.1" in old.message
    digest = hashlib.sha256(page).hexdigest()
    assert (
        await see(registry, DeploymentProbe(source="site", sha256=digest), NonEmpty())
    ).outcome is Outcome.PASS
    assert (
        await see(registry, DeploymentProbe(source="site", sha256="0" * 64), NonEmpty())
    ).outcome is Outcome.MISMATCH


async def test_plain_text_version_endpoint(server: LocalHTTP, registry: SourceRegistry) -> None:
    server.route("/v", body=b"1.0.3\n")
    obs = await see(
        registry, DeploymentProbe(source="site", path="/v", version="1.0.3"), NonEmpty()
    )
    assert obs.outcome is Outcome.PASS


# --- outbound logs ------------------------------------------------------------------------------


async def test_sent_log_rung_at_least(server: LocalHTTP, registry: SourceRegistry) -> None:
    server.json("/api/messages/m1", '{"id": "m1", "status": "delivered"}')
    server.json("/api/messages/m2", '{"id": "m2", "status": "queued"}')
    server.json("/api/messages/m3", '{"id": "m3", "status": "bounced"}')
    want = RungAtLeast(value="delivered")
    assert (
        await see(registry, SentLogProbe(source="psp", message_id="m1"), want)
    ).outcome is Outcome.PASS
    queued = await see(registry, SentLogProbe(source="psp", message_id="m2"), want)
    assert queued.outcome is Outcome.MISMATCH and queued.value == "queued"
    bounced = await see(
        registry, SentLogProbe(source="psp", message_id="m3"), RungAtLeast(value="sent")
    )
    assert bounced.outcome is Outcome.MISMATCH and "not on the message ladder" in bounced.message
    never = await see(registry, SentLogProbe(source="psp", message_id="m9"), want)
    assert never.outcome is Outcome.EMPTY


async def test_call_log_rung_at_least(server: LocalHTTP, registry: SourceRegistry) -> None:
    server.json("/api/calls/c1", '{"sid": "c1", "state": "answered"}')
    probe = CallLogProbe(source="psp", call_id="c1", status_field="state")
    assert (await see(registry, probe, RungAtLeast(value="ringing"))).outcome is Outcome.PASS
    assert (await see(registry, probe, RungAtLeast(value="completed"))).outcome is Outcome.MISMATCH
    no_field = CallLogProbe(source="psp", call_id="c1")
    assert (await see(registry, no_field, RungAtLeast(value="ringing"))).outcome is Outcome.MISMATCH


# --- pull requests ------------------------------------------------------------------------------


async def test_pull_request_url_resolves(server: LocalHTTP, registry: SourceRegistry) -> None:
    server.route("/example/site/pull/12", body=b"<title>Add team plan #12</title>")
    found = await see(
        registry,
        GitProbe(pull_request_url=server.url("/example/site/pull/12")),
        Contains(value="#12"),
    )
    assert found.outcome is Outcome.PASS
    missing = await see(
        registry, GitProbe(pull_request_url=server.url("/example/site/pull/13")), NonEmpty()
    )
    assert missing.outcome is Outcome.EMPTY


def test_route_helper_records_requests(server: LocalHTTP) -> None:
    # The fixture itself: a route function sees the request it answers.
    seen: list[Request] = []
    server.routes["/echo"] = lambda req: (seen.append(req), Response(200, b"x"))[1]
    import urllib.request

    with urllib.request.urlopen(server.url("/echo")) as resp:
        assert resp.read() == b"x"
    assert seen and seen[0].path == "/echo"
    _ = Count


# --- answers that observe nothing, or too much ----------------------------------------------


async def test_a_compressed_body_cut_short_is_not_read_as_a_shorter_page(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    import zlib

    page = b"<html>" + bytes(range(256)) * 64 + b"<p>Order 123: shipped</p></html>"
    pack = zlib.compressobj(9, zlib.DEFLATED, 31)
    gz = pack.compress(page) + pack.flush()
    server.route("/whole", body=gz, **{"Content-Encoding": "gzip"})
    server.route("/half", body=iter([gz[: len(gz) // 2]]), **{"Content-Encoding": "gzip"})
    server.route("/brotli", body=b"\x8b\x02\x80", **{"Content-Encoding": "br"})
    whole = await see(registry, HttpProbe(source="site", url="/whole"), Contains(value="shipped"))
    assert whole.outcome is Outcome.PASS, whole.message
    # An empty or mismatched reading would let a retry after an act error act again.
    half = await see(registry, HttpProbe(source="site", url="/half"), Contains(value="shipped"))
    assert half.outcome is Outcome.PROBE_ERROR and "cut short" in half.message, half.message
    other = await see(registry, HttpProbe(source="site", url="/brotli"), NonEmpty())
    assert other.outcome is Outcome.PROBE_ERROR and "'br'" in other.message, other.message
    assert server.requests[0].headers.get("accept-encoding") == "gzip, deflate"


async def test_any_status_still_reads_no_error_page_as_the_answer(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    for path, status in (("/down", 503), ("/denied", 401), ("/busy", 429)):
        server.route(path, status=status, body=b"order 123 shipped? try again later")
        obs = await see(
            registry, HttpProbe(source="site", url=path, status=None), Contains(value="shipped")
        )
        assert obs.outcome is Outcome.PROBE_ERROR, (status, obs.message)
    # A status the probe names is its answer, and any other page is still read.
    named = await see(
        registry, HttpProbe(source="site", url="/down", status=503), Contains(value="shipped")
    )
    assert named.outcome is Outcome.PASS, named.message
    server.route("/gone", status=404, body=b"no order 123 here")
    gone = await see(
        registry, HttpProbe(source="site", url="/gone", status=None), Contains(value="order 123")
    )
    assert gone.outcome is Outcome.PASS, gone.message


async def test_server_text_cannot_swell_the_signed_observation(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    big = "A" * 3_000_000
    server.json("/api/payments/p1", json.dumps({"amount": 1, "currency": "usd", "status": big}))
    server.json("/api/objects/o1", f'{{"{big}": 1, "{big}": 2}}')
    server.json("/version", json.dumps({"version": big}))
    for probe in (
        PaymentProbe(source="psp", payment_id="p1", status="succeeded"),
        ProviderObjectProbe(source="psp", path="/objects/{id}", object_id="o1"),
        DeploymentProbe(source="site", path="/version", version="1.2.3"),
        HttpProbe(source="psp", url="/objects/o1"),
    ):
        expect = JsonPath(path="$.x", op="exists") if probe.kind == "http" else NonEmpty()
        obs = await see(registry, probe, expect)
        assert obs.outcome is not Outcome.PASS
        assert len(obs.model_dump_json()) < 200_000, (probe.kind, len(obs.message or ""))


async def test_a_key_given_as_the_urls_user_name_is_never_shown() -> None:
    key = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
    async with SourceRegistry({"stripe": {"url": f"http://{key}:@127.0.0.1:1/v1"}}) as reg:
        obs = await see(reg, HttpProbe(source="stripe", url="/charges/ch_1"), NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR
    assert key not in obs.message and key[:12] not in obs.message, obs.message


def test_a_probe_by_id_reads_the_object_it_names() -> None:
    from landed.task.spec import TaskSpecError
    from landed.task.validate import check_spec

    for make in (
        lambda path: PaymentProbe(source="psp", payment_id="pay_NEW", path=path),
        lambda path: SentLogProbe(source="psp", message_id="m", path=path),
        lambda path: CallLogProbe(source="psp", call_id="c", path=path),
        lambda path: ProviderObjectProbe(source="psp", object_id="o", path=path),
    ):
        for path in ("/payments/pay_OLD", "/messages/msg_OLD?ref={id}"):
            probe = make(path)  # a stored task holding one still loads
            assert "must hold {id}" in (probe_problem(probe) or "")
            spec = {
                "task_id": "t",
                "owner": "a",
                "outcome": "o",
                "target": "t",
                "act": {"name": "x"},
                "proof_plan": [
                    {"action": "a", "probe": probe.model_dump(), "expect": {"type": "non_empty"}}
                ],
            }
            with pytest.raises(TaskSpecError, match=r"must hold \{id\}"):
                check_spec(spec)


async def test_a_deployment_version_is_the_text_served(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    cases = [
        ('{"version": 1.10}', "1.1", False),  # a float would re-spell it
        ('{"version": true}', "True", False),
        ('{"version": "1.10"}', "1.10", True),
        ("1.2", "1.2", True),
        ("42", "42", True),
        ('"1.2.3"', "1.2.3", True),
    ]
    for i, (body, claim, passes) in enumerate(cases):
        server.route(f"/v{i}", body=body.encode())
        probe = DeploymentProbe(source="site", path=f"/v{i}", version=claim)
        obs = await see(registry, probe, NonEmpty())
        assert (obs.outcome is Outcome.PASS) is passes, (body, claim, obs.message)


async def test_bad_urls_and_malformed_answers_are_named(server: LocalHTTP) -> None:
    server.route("/dup", body=b"okk", **{"Content-Length": "3"})  # and the server's own
    server.route("/go", status=302, **{"Location": "ftp://127.0.0.1/file"})
    sources = {
        "psp": {"url": server.url("/api"), "token": "psp-token-123456"},
        "open": {"url": server.base, "follow_redirects": True, "allow_absolute_urls": True},
    }
    async with SourceRegistry(sources) as reg:
        port = await see(
            reg, HttpProbe(source="psp", url="http://127.0.0.1:99999/api/x"), NonEmpty()
        )
        dup = await see(reg, HttpProbe(source="open", url="/dup?sig=s3cr3t"), NonEmpty())
        ftp = await see(reg, HttpProbe(source="open", url="/go"), NonEmpty())
    assert port.outcome is Outcome.PROBE_ERROR and "is not a valid URL" in port.message, (
        port.message
    )
    assert dup.outcome is Outcome.PROBE_ERROR and "malformed response" in dup.message, dup.message
    assert "400" not in dup.message and "s3cr3t" not in dup.message, dup.message
    assert ftp.outcome is Outcome.PROBE_ERROR and "only http and https" in ftp.message, ftp.message


async def test_every_deflate_and_gzip_body_a_server_may_send_is_read_whole(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    import zlib

    page = b"<p>status: all systems operational</p>" * 50

    def packed(wbits: int, data: bytes) -> bytes:
        pack = zlib.compressobj(9, zlib.DEFLATED, wbits)
        return pack.compress(data) + pack.flush()

    bodies = {
        "/zlib": ("deflate", packed(15, page)),
        "/raw": ("deflate", packed(-15, page)),  # deflate without the zlib header
        "/multi": ("gzip", packed(31, page[:100]) + packed(31, page[100:])),  # two members
    }
    for path, (encoding, body) in bodies.items():
        server.route(path, body=iter([body[:1], body[1:]]), **{"Content-Encoding": encoding})
        obs = await see(registry, HttpProbe(source="site", url=path), Contains(value="operational"))
        assert obs.outcome is Outcome.PASS, (path, obs.message)
        assert obs.evidence is not None and obs.evidence.total_bytes == len(page), path
    server.route("/tail", body=packed(31, page) + b"junk", **{"Content-Encoding": "gzip"})
    tail = await see(registry, HttpProbe(source="site", url="/tail"), Contains(value="operational"))
    assert tail.outcome is Outcome.PROBE_ERROR and "after its compressed body" in tail.message


async def test_a_redirect_message_shows_no_query_and_a_whole_number_is_a_version(
    server: LocalHTTP,
) -> None:
    server.route(
        "/go", status=302, **{"Location": "ftp://files.example/r.csv?X-Amz-Signature=9f2c"}
    )
    server.route("/version", body=b'{"version": 42}')
    sources = {"open": {"url": server.base, "follow_redirects": True, "allow_absolute_urls": True}}
    async with SourceRegistry(sources) as reg:
        ftp = await see(reg, HttpProbe(source="open", url="/go"), NonEmpty())
        version = await see(
            reg, DeploymentProbe(source="open", path="/version", version="42"), NonEmpty()
        )
    assert ftp.outcome is Outcome.PROBE_ERROR and "9f2c" not in ftp.message, ftp.message
    assert version.outcome is Outcome.PASS, version.message


async def test_a_raw_deflate_body_past_one_inflate_step_is_read_whole(
    server: LocalHTTP, registry: SourceRegistry
) -> None:
    import zlib

    body = b"\x00" * ((2 << 20) + 1)  # zlib keeps output back past a 1 MiB step
    pack = zlib.compressobj(9, zlib.DEFLATED, -15)
    server.route(
        "/zeros", body=pack.compress(body) + pack.flush(), **{"Content-Encoding": "deflate"}
    )
    obs = await see(registry, HttpProbe(source="site", url="/zeros"), NonEmpty())
    assert obs.outcome is Outcome.PASS, obs.message
    assert obs.evidence is not None and obs.evidence.total_bytes == len(body)
