"""A reservation is the credential's: the strictest ``min_role`` among its deployments wins.

001: "the same credential configured twice: the strictest declaration wins;
``free`` means no declaration", so a looser duplicate cannot widen access and
the order of the deployments does not matter. The configuration computes it
once, when it is validated (``Deployment.reserved_for``); the declared
``min_role`` is what it stores and shows.
"""

from __future__ import annotations

import json
import random
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.effective import report
from edgeproxy.config.loader import from_document, parse_config, to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.config.roles import Role
from edgeproxy.routing.access import reachable
from edgeproxy.routing.explain.reasons import Cause
from edgeproxy.routing.selection import Blocked, BlockReason, Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.service.token_count import counters

PRO_KEY = "env:EDGEPROXY_CRED_PRO"
OTHER_KEY = "env:EDGEPROXY_CRED_OTHER"


def _dep(dep_id: str, credential: str | None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": dep_id,
        "model": "gpt",
        "provider": "openai",
        "base_url": "https://api.example.test/v1",
        "upstream_model": "gpt-4o",
        **fields,
    }
    if credential is not None:
        out["credential"] = credential
    return out


def _config(*deployments: dict[str, Any]) -> GatewayConfig:
    return parse_config({"deployments": list(deployments)}, "test", entry=False)


def _roles(config: GatewayConfig) -> dict[str, Role]:
    return {d.id: d.reserved_for for d in config.deployments}


def test_the_strictest_min_role_of_a_credential_holds_for_each_of_its_deployments() -> None:
    deps = [
        _dep("second", PRO_KEY),
        _dep("premium", PRO_KEY, min_role="pro"),
        _dep("vip", PRO_KEY, model="vip", min_role="internal"),
        _dep("other", OTHER_KEY),
        _dep("keyless", None, provider="openai_compat"),
    ]
    want = {
        "second": Role.INTERNAL,
        "premium": Role.INTERNAL,
        "vip": Role.INTERNAL,
        "other": Role.FREE,
        "keyless": Role.FREE,
    }
    assert _roles(_config(*deps)) == want
    assert _roles(_config(*reversed(deps))) == want  # the order does not matter


def test_a_free_caller_reaches_neither_deployment_of_a_pro_reserved_credential() -> None:
    config = _config(_dep("premium", PRO_KEY, min_role="pro"), _dep("second", PRO_KEY))
    pool = config.pool("gpt")
    assert [reachable(d, Role.FREE) for d in pool] == [False, False]
    assert [reachable(d, Role.PRO) for d in pool] == [True, True]

    free = RouteRequest(role=Role.FREE)
    got = next_deployment(pool, PoolSnapshot(), free, 0.0, random.Random(0))
    assert isinstance(got, Blocked)
    assert got.reason is BlockReason.RESERVED
    second = next(r for r in got.reasons if r.deployment_id == "second")
    assert second.cause is Cause.ROLE
    assert "sharing its credential" in second.detail

    for seed in range(10):
        pro = RouteRequest(role=Role.PRO)
        picked = next_deployment(pool, PoolSnapshot(), pro, 0.0, random.Random(seed))
        assert isinstance(picked, Pick)


def test_token_counting_spends_a_reserved_credential_only_for_its_roles() -> None:
    claude = {"provider": "anthropic", "base_url": "https://api.anthropic.test/v1"}
    config = _config(
        _dep("premium", PRO_KEY, min_role="pro", **claude), _dep("second", PRO_KEY, **claude)
    )
    pool = config.pool("gpt")
    assert counters(pool, Role.FREE) == []
    assert [d.id for d in counters(pool, Role.PRO)] == ["premium", "second"]


def test_the_declared_role_is_what_is_stored_and_lowering_it_frees_every_deployment() -> None:
    config = _config(_dep("premium", PRO_KEY, min_role="pro"), _dep("second", PRO_KEY))
    document = to_document(config)
    stored = {d["id"]: d["min_role"] for d in json.loads(document)["deployments"]}
    assert stored == {"premium": "pro", "second": "free"}
    again = from_document(document)
    assert again == config
    assert _roles(again) == {"premium": Role.PRO, "second": Role.PRO}
    lowered = _config(_dep("premium", PRO_KEY), _dep("second", PRO_KEY))
    assert _roles(lowered) == {"premium": Role.FREE, "second": Role.FREE}


def test_deployments_handed_to_a_configuration_are_not_changed_for_another() -> None:
    premium = Deployment.model_validate(_dep("premium", PRO_KEY, min_role="pro"))
    second = Deployment.model_validate(_dep("second", PRO_KEY))
    shared = GatewayConfig(deployments=[premium, second])
    assert _roles(shared)["second"] is Role.PRO
    assert second.reserved_for is Role.FREE  # the instance itself is left as declared
    alone = GatewayConfig(deployments=[second])
    assert _roles(alone) == {"second": Role.FREE}
    assert _roles(shared)["second"] is Role.PRO


def test_the_pool_s_effective_settings_say_which_deployment_reserved_the_credential() -> None:
    config = _config(
        _dep("premium", PRO_KEY, model="other", min_role="pro"),
        _dep("second", PRO_KEY),
        _dep("open", OTHER_KEY),
    )
    assert report(config, "gpt", Operation.CHAT)["min_role"] == {
        "second": {"value": "pro", "level": "deployment", "source": "deployments.premium.min_role"},
        "open": {"value": "free", "level": "deployment", "source": "deployments.open.min_role"},
    }
