"""Authentication off is a local demo switch only; a deployed gateway never relays for anyone.

The rule: ``EDGEPROXY_AUTH=off`` serves ``/v1/*`` requests without a valid key
(none, or one the gateway does not know) as anonymous ``free`` callers; revoked
and expired keys stay refused. Except on Lambda (``AWS_LAMBDA_FUNCTION_NAME`` set), where
it is ignored. So a deployed gateway with auth "off" and no keys refuses
every request with 401. ``/admin/*`` always needs an admin key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.keys.helpers import chat
from tests.integration.keys.test_key_auth import ADMIN_ROUTES, V1_ROUTES

DEPLOYED_WITH_AUTH_OFF = {"EDGEPROXY_AUTH": "off", "AWS_LAMBDA_FUNCTION_NAME": "edgeproxy-proxy"}


def _cfg(upstream: MockUpstream) -> dict[str, Any]:
    return config(
        deployment("a", upstream),
        deployment("emb", upstream, model="text-embed", operations=["embeddings"]),
    )


def test_a_deployed_gateway_with_auth_off_and_no_keys_refuses_every_request(
    start_gateway: Callable[..., Any],
    upstream_a: MockUpstream,
    caplog: pytest.LogCaptureFixture,
) -> None:
    gw = start_gateway(_cfg(upstream_a), env=DEPLOYED_WITH_AUTH_OFF)
    for method, path, body in V1_ROUTES + ADMIN_ROUTES:
        for headers in ({}, {"authorization": "Bearer sk-anything"}):
            answer = httpx.request(method, gw.base_url + path, json=body, headers=headers)
            assert answer.status_code == 401, (path, answer.text)
    assert upstream_a.requests() == []
    assert any(
        r.levelno == logging.ERROR and "ignored on Lambda" in r.getMessage() for r in caplog.records
    )


def test_locally_auth_off_serves_keyless_callers_loudly_but_not_the_admin_api(
    start_gateway: Callable[..., Any],
    upstream_a: MockUpstream,
    caplog: pytest.LogCaptureFixture,
) -> None:
    gw = start_gateway(_cfg(upstream_a), env={"EDGEPROXY_AUTH": "off"})
    assert chat(gw.base_url, None).status_code == 200
    assert chat(gw.base_url, "ep-unknown").status_code == 200  # a name, not a credential
    for method, path, body in ADMIN_ROUTES:
        for headers in ({}, {"authorization": "Bearer ep-unknown"}):
            answer = httpx.request(method, gw.base_url + path, json=body, headers=headers)
            assert answer.status_code == 401
    warned = [r for r in caplog.records if "AUTHENTICATION IS OFF" in r.getMessage()]
    assert [r.levelno for r in warned] == [logging.WARNING]
