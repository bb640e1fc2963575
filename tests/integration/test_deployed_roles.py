"""Each function's role and environment as the SAM transform and CloudFormation would deploy them."""

from __future__ import annotations

from edgeproxy_dev.deployed import deployed_functions, stack_values
from edgeproxy_dev.template import default_template_path, load_template
from edgeproxy_dev.transform import COMBINATIONS, transform_template

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
    # Every statement of every role names concrete ARNs (no intrinsic left unresolved).
    for function in functions.values():
        for statement in function.statements:
            named = statement["Resource"]
            for arn in named if isinstance(named, list) else [named]:
                assert isinstance(arn, str), (function.name, statement)
                assert arn.startswith("arn:aws:"), (function.name, statement)
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


def test_tracing_parameters_give_the_proxy_functions_xray_access_and_the_otlp_endpoint() -> None:
    off = deployed_functions("state", {"AuthMode": "keys"})
    on = deployed_functions(
        "state",
        {"AuthMode": "keys", "XRayTracing": "on", "OtlpEndpoint": "https://otel.example:4318"},
    )
    for name in ("ProxyFunction", "StreamFunction"):
        assert "XRayWrites" not in {s["Sid"] for s in off[name].statements}
        assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in off[name].environment
        [xray] = [s for s in on[name].statements if s["Sid"] == "XRayWrites"]
        assert xray["Action"] == ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
        assert xray["Resource"] == "*"  # X-Ray's write actions take no resource ARN
        assert on[name].environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == "https://otel.example:4318"
    assert off["ProxyFunction"].environment["EDGEPROXY_XRAY"] == "off"
    assert on["ProxyFunction"].environment["EDGEPROXY_XRAY"] == "on"
    assert "EDGEPROXY_XRAY" not in on["StreamFunction"].environment
    for name in ("HealthJobFunction", "QuotaRefreshFunction"):
        assert not any(a.startswith("xray:") for a in on[name].actions())


def test_active_tracing_only_with_xray_on_and_only_on_the_proxy_functions() -> None:
    template = load_template(default_template_path())
    for value, mode in (("off", "PassThrough"), ("on", "Active")):
        overrides = {"AuthMode": "keys", "XRayTracing": value}
        stack = stack_values(template, overrides, "state")
        resources = transform_template(overrides)["Resources"]
        modes = {
            name: stack.resolve(resource["Properties"].get("TracingConfig", {})).get("Mode")
            for name, resource in resources.items()
            if resource["Type"] == "AWS::Lambda::Function"
        }
        assert modes == {
            "ProxyFunction": mode,
            "StreamFunction": mode,
            "HealthJobFunction": None,
            "QuotaRefreshFunction": None,
        }
