"""Each function's role and environment as the SAM transform and CloudFormation would deploy them."""

from __future__ import annotations

from edgeproxy_dev.deployed import deployed_functions
from edgeproxy_dev.transform import COMBINATIONS

TABLE_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/state"
MODEL = COMBINATIONS["BedrockModelArns"][1]


def test_each_function_gets_its_roles_statements_with_the_stacks_values() -> None:
    functions = deployed_functions("state", {"AuthMode": "keys"})
    assert {name: f.role for name, f in functions.items()} == {
        "ProxyFunction": "ProxyRole",
        "StreamFunction": "ProxyRole",
        "HealthJobFunction": "JobRole",
        "QuotaRefreshFunction": "QuotaRole",
    }
    proxy = functions["ProxyFunction"]
    resources = {s["Sid"]: s["Resource"] for s in proxy.statements}
    assert resources == {
        "StateTableItems": TABLE_ARN,
        "CredentialParameters": "arn:aws:ssm:us-east-1:123456789012:parameter/edgeproxy/*",
        "CredentialSecrets": "arn:aws:secretsmanager:us-east-1:123456789012:secret:edgeproxy/*",
    }  # no Bedrock statement without models
    # The environment is the function's own merged over the template's Globals.
    assert proxy.environment["EDGEPROXY_TABLE"] == "state"
    assert proxy.environment["EDGEPROXY_ADMIN_KEY_REF"] == "ssm:/edgeproxy/admin-key"
    assert functions["HealthJobFunction"].environment["EDGEPROXY_STAGE"] == "dev"
    assert "AWS_LWA_READINESS_CHECK_PATH" in functions["StreamFunction"].environment


def test_the_bedrock_statement_names_exactly_the_configured_models() -> None:
    functions = deployed_functions("state", {"AuthMode": "iam", "BedrockModelArns": MODEL})
    for name in ("ProxyFunction", "StreamFunction"):
        (bedrock,) = [s for s in functions[name].statements if s["Sid"] == "BedrockModels"]
        assert bedrock["Resource"] == [MODEL]
    assert not any(a.startswith("bedrock:") for a in functions["HealthJobFunction"].actions())
