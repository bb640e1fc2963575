"""``/health/deep`` and ``edgeproxy status``: a credential the gateway cannot resolve is not available."""

from __future__ import annotations

import io
from typing import Any

from edgeproxy.cli.admin import print_status
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.admin.helpers import admin, chat, keys, ok

UNSET = "EDGEPROXY_CRED_NEVER_SET_IN_ANY_TEST"


def _rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for pool in report["pools"] for row in pool["deployments"]}


def test_a_deployment_whose_credential_cannot_be_resolved_is_shown_unresolved(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a, priority=1, credential=f"env:{UNSET}"),
            deployment("b", upstream_b),
            gateway=keys(),
        )
    )
    # What the router does with it: a's call cannot be made, b serves.
    assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "b"
    report = ok(admin(gw.base_url, "GET", "/health/deep"))
    a, b = _rows(report)["a"], _rows(report)["b"]
    assert (a["status"], a["available"]) == ("credential_unresolved", False)
    assert UNSET in a["credential_problem"]  # the reference's name, which is no secret
    assert (b["status"], b["available"]) == ("available", True)
    assert "credential_problem" not in b
    assert report["status"] == "degraded"

    out = io.StringIO()
    print_status(report, out)
    line = next(row for row in out.getvalue().splitlines() if row.strip().startswith("a "))
    assert "credential_unresolved" in line
    assert "available" not in line.replace("credential_unresolved", "")


def test_a_drained_deployment_stays_disabled_whatever_its_credential(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a, credential=f"env:{UNSET}", enabled=False),
            deployment("b", upstream_b),
            gateway=keys(),
        )
    )
    a = _rows(ok(admin(gw.base_url, "GET", "/health/deep")))["a"]
    assert (a["status"], a["available"]) == ("disabled", False)
