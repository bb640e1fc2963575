"""``POST /admin/connection-test``: a deployment tried before it is saved.

The same checks as the write that would save it (egress rule, credential
references), then one chat call of one token through the gateway's upstream
client; nothing is stored, the credential is never in the answer.
"""

from __future__ import annotations

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import MOCK_KEY, deployment
from tests.integration.admin.helpers import CLIENT_KEY, admin, ok, two_deployments

PATH = "/admin/connection-test"


def test_a_new_deployment_is_tried_with_one_call_and_not_saved(
    start_gateway, make_upstream, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    c = make_upstream("c")
    version = ok(admin(gw.base_url, "GET", "/admin/deployments"))["version"]

    found = ok(admin(gw.base_url, "POST", PATH, json=deployment("c", c, model="other-chat")))
    assert (found["ok"], found["deployment"], found["status"]) == (True, "c", 200)
    assert found["latency_ms"] >= 0
    assert found["error"] is None
    [call] = c.requests()
    assert (call["body"]["max_tokens"], call["body"]["model"]) == (1, "mock-small")
    shown = ok(admin(gw.base_url, "GET", "/admin/deployments"))
    assert [d["id"] for d in shown["deployments"]] == ["a", "b"]  # nothing stored
    assert shown["version"] == version


def test_an_upstream_refusal_is_shown_on_the_credential_without_the_secret(
    start_gateway, make_upstream, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    c = make_upstream("c")
    c.set_faults([{"status": 401}])
    answer = admin(gw.base_url, "POST", PATH, json=deployment("c", c))
    found = ok(answer)
    assert (found["ok"], found["status"], found["field"]) == (False, 401, "credential")
    assert found["error"]
    assert MOCK_KEY not in answer.text

    unset = ok(
        admin(
            gw.base_url,
            "POST",
            PATH,
            json=deployment("c", c, credential="env:EDGEPROXY_CRED_NOT_SET"),
        )
    )
    assert (unset["ok"], unset["field"]) == (False, "credential")
    assert len(c.requests()) == 1  # the unresolvable reference sent nothing


def test_the_rules_of_the_write_refuse_before_any_call(
    start_gateway, make_upstream, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    c = make_upstream("c")
    outside = {**deployment("c", c), "base_url": "http://169.254.169.254/v1"}
    refused = admin(gw.base_url, "POST", PATH, json=outside)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["param"] == "base_url"
    bad_ref = admin(gw.base_url, "POST", PATH, json=deployment("c", c, credential="file:/x"))
    assert bad_ref.status_code == 400, bad_ref.text
    assert bad_ref.json()["error"]["param"] == "credential"
    assert c.requests() == []
    client = admin(gw.base_url, "POST", PATH, key=CLIENT_KEY, json=deployment("c", c))
    assert client.status_code in (401, 403)


def test_a_changed_deployment_is_tried_as_its_write_would_store_it(
    start_gateway, make_upstream, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    c = make_upstream("c")
    # The body is the whole deployment, as its PUT: the stored credential goes nowhere unnamed.
    moved = {k: v for k, v in deployment("b", c).items() if k != "credential"}
    ok(admin(gw.base_url, "POST", PATH, json=moved))
    [unnamed] = c.requests()
    assert MOCK_KEY not in str(unnamed["headers"])
    restated = ok(admin(gw.base_url, "POST", PATH, json=deployment("b", c)))
    assert (restated["ok"], restated["deployment"]) == (True, "b")
    assert MOCK_KEY in str(c.requests()[1]["headers"])
    assert ok(admin(gw.base_url, "GET", "/admin/deployments/b"))["base_url"] == upstream_b.base_url


def test_an_embeddings_deployment_is_tried_with_one_embedding(
    start_gateway, make_upstream, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    c = make_upstream("c")
    embeds = deployment("c", c, model="embed", operations=["embeddings"])
    found = ok(admin(gw.base_url, "POST", PATH, json=embeds))
    assert (found["ok"], found["status"]) == (True, 200)
    [call] = c.requests()
    assert call["path"].endswith("/embeddings")
    assert call["body"]["input"] == "ping"
