"""The process's per-deployment prompt calibrations (``service.limits.calibrations``)."""

from __future__ import annotations

from edgeproxy.config.deployment import Deployment
from edgeproxy.routing.estimates.tokens import prompt_bound
from edgeproxy.service.limits.calibrations import Calibrations

BODY = {"messages": [{"role": "user", "content": "Hello!"}]}


def _deployment(dep_id: str) -> Deployment:
    return Deployment.model_validate(
        {
            "id": dep_id,
            "model": "m",
            "provider": "openai",
            "upstream_model": "u",
            "base_url": "https://api.openai.com/v1",
        }
    )


def test_each_deployment_learns_from_its_own_answers() -> None:
    cals = Calibrations()
    a, b = _deployment("a"), _deployment("b")
    assert cals.ratio([a, b]) == 1.0  # uncalibrated: the estimate alone
    cals.observe("a", BODY, reported=2 * prompt_bound(BODY))
    assert cals.of("a").ratio == 2.0
    assert cals.of("b").samples == 0
    assert cals.ratio([b]) == 1.0
    assert cals.ratio([a, b]) == 2.0
