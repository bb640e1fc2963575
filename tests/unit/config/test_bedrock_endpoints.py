"""A bedrock deployment's ``base_url`` is an AWS Bedrock runtime endpoint or one the owner lists."""

from __future__ import annotations

import pytest

from edgeproxy.config.bedrock_endpoints import endpoint_problem, signable
from edgeproxy.config.egress import EgressSettings
from edgeproxy.config.loader import parse_config
from edgeproxy.errors import ConfigError

AWS = [
    "https://bedrock-runtime.us-east-1.amazonaws.com",
    "https://bedrock-runtime.eu-central-1.amazonaws.com/",
    "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com",
    "https://bedrock-runtime.cn-north-1.amazonaws.com.cn",
    "https://bedrock-runtime.us-east-1.api.aws",
    "https://BEDROCK-RUNTIME.us-east-1.amazonaws.com:443",
]
REFUSED = [
    "https://evil.example",
    "https://bedrock-runtime.us-east-1.amazonaws.com.evil.example",
    "https://evilbedrock-runtime.us-east-1.amazonaws.com",
    "https://bedrock.us-east-1.amazonaws.com",  # the control plane, not the runtime
    "http://bedrock-runtime.us-east-1.amazonaws.com",
    "https://bedrock-runtime.us-east-1.amazonaws.com:8443",
    "https://user:pw@bedrock-runtime.us-east-1.amazonaws.com",
    "https://169.254.169.254",
    "http://127.0.0.1:9000",
]
# Right host, but a base_url is only the endpoint (its requests add their own paths).
SHAPES = [
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/x",
    "https://bedrock-runtime.us-east-1.amazonaws.com?x=1",
]
VPCE = "https://vpce-0a1b-2c3d.bedrock-runtime.us-east-1.vpce.amazonaws.com"


@pytest.mark.parametrize("url", AWS)
def test_aws_runtime_endpoints_are_accepted(url: str) -> None:
    assert endpoint_problem(url) is None
    assert signable(url.rstrip("/") + "/model/m/converse")


@pytest.mark.parametrize("url", REFUSED)
def test_other_hosts_are_refused_and_never_signed_for(url: str) -> None:
    assert endpoint_problem(url) is not None
    assert not signable(url)


@pytest.mark.parametrize("url", SHAPES)
def test_a_base_url_is_the_endpoint_alone(url: str) -> None:
    assert "no path or query" in (endpoint_problem(url) or "")


def test_an_endpoint_the_owner_lists_is_accepted_by_its_origin() -> None:
    egress = EgressSettings(
        bedrock_endpoints=[VPCE.upper().replace("HTTPS", "https"), "http://127.0.0.1:9000"]
    )
    listed = egress.bedrock_endpoints
    assert listed == [VPCE, "http://127.0.0.1:9000"]
    assert endpoint_problem(VPCE, listed) is None
    assert endpoint_problem("http://127.0.0.1:9000", listed) is None
    assert endpoint_problem("http://127.0.0.1:9001", listed) is not None  # another port
    assert signable("http://127.0.0.1:9000/model/m/converse", listed)
    with pytest.raises(ValueError, match="not an endpoint"):
        EgressSettings(bedrock_endpoints=["https://x.example/path"])


def _bedrock(base_url: str, **egress: object) -> dict[str, object]:
    dep = {
        "id": "br",
        "model": "claude",
        "provider": "bedrock",
        "base_url": base_url,
        "upstream_model": "anthropic.claude-3-haiku",
    }
    return {"deployments": [dep], "gateway": {"egress": egress}}


def test_the_rule_holds_where_a_configuration_comes_in() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(_bedrock("https://collector.example"), "t.yaml")
    assert "deployments[0].base_url" in str(refused.value)
    assert "not an AWS Bedrock runtime endpoint" in str(refused.value)
    parse_config(_bedrock(AWS[0]), "t.yaml")
    parse_config(_bedrock(VPCE, bedrock_endpoints=[VPCE]), "t.yaml")
    # Another provider may use any allowed host: the rule is about SigV4.
    other = _bedrock("https://collector.example")
    other["deployments"][0].update(provider="openai", credential="env:EDGEPROXY_CRED_X")  # type: ignore[index]
    parse_config(other, "t.yaml")
