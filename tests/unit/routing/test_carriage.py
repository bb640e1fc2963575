"""What a provider kind cannot carry is decided before selection, from its declaration.

``routing.features`` reads a request's features from its chat body; each
provider kind's ``config.providers.CARRIAGE`` says which it cannot carry; a
deployment that cannot is incompatible, so a compatible one in any tier
takes the request and the others are never attempted.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.config.providers import CARRIAGE, uncarried
from edgeproxy.config.router import Strategy
from edgeproxy.routing.eligibility import Status, assess
from edgeproxy.routing.explain.reasons import Cause, Outcome
from edgeproxy.routing.features import MAX_PART_TYPE, request_features
from edgeproxy.routing.selection import Blocked, BlockReason, Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import Binding, BindingKey, PoolSnapshot

from .builders import dep

NOW = 60_000.0
HELLO = [{"role": "user", "content": "Hello"}]
LINK = {"type": "image_url", "image_url": {"url": "https://example.test/cat.png"}}
INLINE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def claude(dep_id: str, **fields: Any) -> Deployment:
    return dep(
        dep_id,
        provider=ProviderKind.ANTHROPIC,
        base_url="https://api.anthropic.test/v1",
        upstream_model="claude-x",
        **fields,
    )


def route(deps: list[Deployment], req: RouteRequest) -> Pick | Blocked:
    return next_deployment(deps, PoolSnapshot(), req, NOW, random.Random(0))


@pytest.mark.parametrize(
    ("body", "features"),
    [
        ({"messages": HELLO}, set()),
        ({"messages": HELLO, "n": 1}, set()),
        ({"messages": HELLO, "n": 2}, {"n"}),
        ({"messages": HELLO, "response_format": {"type": "text"}}, set()),
        ({"messages": HELLO, "response_format": {"type": "json_object"}}, {"response_format"}),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, LINK]}]},
            {"part:text", "part:image_url", "image_link"},
        ),
        ({"messages": [{"role": "user", "content": [INLINE]}]}, {"part:image_url"}),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "refusal"}]}]},
            {"part:refusal"},
        ),
        # Every translation reads these roles' content as text only: their parts never refuse.
        ({"messages": [{"role": "system", "content": [{"type": "file"}]}]}, set()),
        ({"messages": [{"role": "tool", "content": [{"type": "file"}]}]}, set()),
        ({"messages": [{"role": "user", "content": [{"text": "no type"}, "bare"]}]}, {"part:?"}),
    ],
)
def test_a_chat_body_s_features(body: dict[str, Any], features: set[str]) -> None:
    assert request_features(Operation.CHAT, body) == features


def test_only_chat_bodies_have_features_and_a_part_type_is_kept_short() -> None:
    assert request_features(Operation.EMBEDDINGS, {"input": "x", "n": 2}) == frozenset()
    long = {"messages": [{"role": "user", "content": [{"type": "x" * 5000}]}]}
    (feature,) = request_features(Operation.CHAT, long)
    assert feature == "part:" + "x" * MAX_PART_TYPE


def test_a_kind_s_declaration_says_what_it_lacks() -> None:
    features = {"n", "response_format", "image_link", "part:text", "part:file"}
    assert CARRIAGE[ProviderKind.OPENAI_COMPAT].lacking(features) == ()
    assert CARRIAGE[ProviderKind.ANTHROPIC].lacking(features) == ("n", "part:file")
    assert CARRIAGE[ProviderKind.BEDROCK].lacking(features) == (
        "image_link",
        "n",
        "part:file",
        "response_format",
    )


def test_n_above_one_skips_every_anthropic_deployment_for_a_lower_tier() -> None:
    deps = [
        claude("c1", priority=1),
        claude("c2", priority=1),
        claude("c3", priority=1),
        dep("compat", provider=ProviderKind.OPENAI_COMPAT, priority=0),
    ]
    req = RouteRequest(strategy=Strategy.SIMPLE_SHUFFLE, sticky=False, features=frozenset({"n"}))
    for seed in range(20):
        got = next_deployment(deps, PoolSnapshot(), req, NOW, random.Random(seed))
        assert isinstance(got, Pick)
        assert got.deployment.id == "compat"
    reasons = {r.deployment_id: r for r in got.reasons}
    for name in ("c1", "c2", "c3"):
        assert (reasons[name].outcome, reasons[name].cause) == (Outcome.EXCLUDED, Cause.FEATURE)
        assert reasons[name].detail == "n"
    # Without the feature the higher tier takes it, as before.
    plain = route(deps, RouteRequest(strategy=Strategy.SIMPLE_SHUFFLE, sticky=False))
    assert isinstance(plain, Pick)
    assert plain.deployment.id in ("c1", "c2", "c3")


def test_a_binding_to_a_deployment_that_cannot_carry_it_is_passed_over() -> None:
    deps = [claude("c1"), dep("compat")]
    bound = Binding(BindingKey("key:x", "gpt", "openai.chat"), "c1", expires_at=NOW + 100)
    snap = PoolSnapshot(binding=bound)
    plain = next_deployment(deps, snap, RouteRequest(caller="key:x"), NOW, random.Random(0))
    assert isinstance(plain, Pick)
    assert (plain.deployment.id, plain.sticky) == ("c1", True)
    req = RouteRequest(caller="key:x", features=frozenset({"n"}))
    got = next_deployment(deps, snap, req, NOW, random.Random(0))
    assert isinstance(got, Pick)
    assert (got.deployment.id, got.sticky) == ("compat", False)


def test_nothing_that_can_carry_it_is_blocked_as_incompatible() -> None:
    deps = [claude("c1"), claude("c2")]
    got = route(deps, RouteRequest(features=frozenset({"n", "part:text"})))
    assert isinstance(got, Blocked)
    assert got.reason is BlockReason.INCOMPATIBLE
    status = assess(deps[0], PoolSnapshot(), NOW, 1000, operation=Operation.CHAT, features={"n"})
    assert (status.status, status.detail) == (Status.INCOMPATIBLE, "feature:n")


def test_a_declared_operation_is_served_only_if_the_kind_carries_it() -> None:
    azure = dep(
        "az",
        provider=ProviderKind.AZURE,
        base_url="https://r.openai.azure.test",
        operations=frozenset({Operation.CHAT, Operation.RESPONSES}),
    )
    assert azure.served_operations == {Operation.CHAT}
    got = route([azure], RouteRequest(operation=Operation.RESPONSES, native=True))
    assert isinstance(got, Blocked)
    assert got.reason is BlockReason.INCOMPATIBLE


def test_the_refusal_names_each_feature_and_the_kinds_that_cannot_carry_it() -> None:
    message, param = uncarried(
        {ProviderKind.ANTHROPIC: {"n"}, ProviderKind.BEDROCK: {"n", "response_format"}}
    )
    assert param == "n"
    assert message == (
        "n > 1 (several choices in one answer) is not supported by anthropic or bedrock "
        "deployments; a response_format other than text is not supported by bedrock deployments"
    )
    message, param = uncarried({ProviderKind.ANTHROPIC: {"part:file"}})
    assert (message, param) == (
        "a content part of type 'file' is not supported by anthropic deployments",
        "messages",
    )
