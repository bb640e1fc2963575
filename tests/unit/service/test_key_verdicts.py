"""The explainer, the edge and the gateway judge a key the same way (hypothesis).

For generated keys (the models they may use, by a pool's name, an alias or
a route group; revoked, expired, rotated or live; with or without limits),
aliases and requested names, at a virtual ``now``:

- the explainer's ``key_allows_model`` is False exactly when the edge
  answers 404 ``model_not_found`` for that model (``check_access``);
- the gateway's verdict (``routing.judge`` on ``key_snapshot``, the snapshot
  it admits on) refuses with ``model_not_allowed`` exactly then, for a key
  the edge accepted (``identify``'s rule: ``key_refusal``), and with that
  rule's reason otherwise;
- an admitted verdict names an rpm write exactly when the key has an rpm
  limit, and token and spend writes exactly when it tracks usage.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgeproxy.api.identity import Identity, check_access
from edgeproxy.config.loader import parse_config
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.errors import ModelNotFound
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.judge.reasons import Reason, Write
from edgeproxy.routing.judge.ruling import Admit, Refuse, judge, key_refusal
from edgeproxy.service.explainer import key_allows
from edgeproxy.service.limits.calibrations import Calibrations
from edgeproxy.service.limits.reserve import key_snapshot
from edgeproxy.service.request import ProxyRequest

NOW = 1_800_000_015.0
POOLS = ("chat", "embed")
ALIAS_NAMES = ("old-chat", "legacy", "old-embed")
NAMES = (*POOLS, *ALIAS_NAMES, "chat:beta", "other")


def _dep(dep_id: str, model: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": dep_id,
        "model": model,
        "provider": "openai",
        "base_url": "https://x.test/v1",
        "upstream_model": "m",
        **fields,
    }


DEPLOYMENTS = [_dep("a", "chat"), _dep("b", "chat", group="beta"), _dep("c", "embed")]


@st.composite
def configs(draw: st.DrawFn) -> GatewayConfig:
    aliases = {
        name: {"model": draw(st.sampled_from(POOLS))}
        for name in draw(st.lists(st.sampled_from(ALIAS_NAMES), unique=True))
    }
    return parse_config({"deployments": DEPLOYMENTS, "aliases": aliases}, "config.yaml")


def _moment(draw: st.DrawFn) -> float | None:
    return draw(st.sampled_from([None, NOW - 1.0, NOW, NOW + 1.0]))


@st.composite
def keys(draw: st.DrawFn) -> ClientKey:
    models = draw(st.none() | st.frozensets(st.sampled_from(NAMES), max_size=3))
    limit = st.none() | st.integers(1, 1000)
    return ClientKey(
        "d" * 64,
        "k",
        models=models,
        revoked=draw(st.booleans()),
        expires_at=_moment(draw),
        secret_expires_at=_moment(draw),
        rpm_limit=draw(limit),
        tpm_limit=draw(limit),
        budget_usd=draw(st.none() | st.floats(0.01, 10.0)),
    )


def _edge_refuses_model(key: ClientKey, requested: str, config: GatewayConfig) -> bool:
    model = config.canonical(requested)
    try:
        check_access(Identity("c", admin=False, key=key), requested, config.names_of(model))
    except ModelNotFound:
        return True
    return False


@settings(max_examples=400, deadline=None)
@given(config=configs(), key=keys(), requested=st.sampled_from((*POOLS, "chat:beta")))
def test_the_explainer_the_edge_and_the_gateway_agree_on_a_key(
    config: GatewayConfig, key: ClientKey, requested: str
) -> None:
    req = ProxyRequest(
        Operation.CHAT,
        requested,
        {"model": requested, "messages": [{"role": "user", "content": "hi"}]},
        "c",
        "r",
        key=key,
    )
    explained = key_allows(req, config)
    assert explained is not _edge_refuses_model(key, requested, config)

    verdict = judge(key_snapshot(req, config, Calibrations()), NOW)
    status = key_refusal(key, NOW)
    if status is not None:
        assert isinstance(verdict, Refuse)
        assert verdict.refusal == status
    elif not explained:
        assert isinstance(verdict, Refuse)
        assert verdict.refusal.reason is Reason.MODEL_NOT_ALLOWED
    else:
        assert isinstance(verdict, Admit)
        writes = () if verdict.plan is None else verdict.plan.writes
        assert (Write.RPM in writes) is (key.rpm_limit is not None)
        assert (Write.TOKENS in writes) is (key.tpm_limit is not None)
        assert (Write.SPEND in writes) is key.tracks_usage


@pytest.mark.parametrize(
    ("allowed", "expected"), [({"old-chat"}, True), ({"chat"}, True), ({"embed"}, False)]
)
def test_a_key_allowed_an_alias_is_allowed_its_model_by_the_explainer(
    allowed: set[str], expected: bool
) -> None:
    config = parse_config(
        {"deployments": DEPLOYMENTS, "aliases": {"old-chat": {"model": "chat"}}}, "config.yaml"
    )
    key = ClientKey("d" * 64, "k", models=frozenset(allowed))
    req = ProxyRequest(Operation.CHAT, "chat", {"model": "chat"}, "c", "r", key=key)
    assert key_allows(req, config) is expected
    assert _edge_refuses_model(key, "chat", config) is not expected
