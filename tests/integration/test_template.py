"""template.yaml passes cfn-lint and keeps the promises the code relies on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from edgeproxy_dev.template import default_template_path, load_template

TEMPLATE = default_template_path()
CFN_LINT = Path(sys.executable).with_name("cfn-lint")
SERVERLESS_RULES = ("--append-rules", "cfn_lint_serverless.rules")


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {n: r for n, r in template["Resources"].items() if r["Type"] == kind}


def test_cfn_lint_with_the_serverless_rules_reports_nothing() -> None:
    # cfn-lint and cfn-lint-serverless are dev dependencies: their absence is a broken
    # install, not a reason to skip. Findings left on purpose are ignored in the
    # template's Metadata, each with its reason beside it.
    assert CFN_LINT.exists(), f"cfn-lint not found beside {sys.executable}"
    result = subprocess.run(  # noqa: S603 - fixed arguments
        [str(CFN_LINT), "--format", "parseable", *SERVERLESS_RULES, "--", str(TEMPLATE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_serverless_rules_are_loaded(tmp_path: Path) -> None:
    # The same run without the template's ignores reports the findings it justifies:
    # proof that the rules ran (an unloaded rule set would report nothing too).
    bare = {k: v for k, v in load_template(TEMPLATE).items() if k != "Metadata"}
    bare_path = tmp_path / "template.json"
    bare_path.write_text(json.dumps(bare))
    result = subprocess.run(  # noqa: S603 - fixed arguments
        [str(CFN_LINT), "--format", "parseable", *SERVERLESS_RULES, "--", str(bare_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ":WS1000:" in result.stdout, result.stdout + result.stderr


def test_auth_mode_switches_both_endpoints_between_client_keys_and_iam(
    template: dict[str, Any],
) -> None:
    assert template["Parameters"]["AuthMode"]["Default"] == "keys"
    (api,) = _of_type(template, "AWS::Serverless::HttpApi").values()
    # Conditions only where CloudFormation evaluates them, never where the SAM
    # transform reads (test_transform.py checks what each mode deploys).
    assert "Auth" not in api["Properties"]
    (route,) = api["Properties"]["DefinitionBody"]["paths"].values()
    condition, iam, keys = route["x-amazon-apigateway-any-method"]["security"]["Fn::If"]
    assert condition == "UseIam"
    assert iam == [{"AWS_IAM": []}]
    assert keys == {"Ref": "AWS::NoValue"}  # the gateway's own client keys
    assert "FunctionUrlConfig" not in template["Resources"]["StreamFunction"]["Properties"]
    url = template["Resources"]["StreamFunctionUrl"]["Properties"]
    assert url["AuthType"] == {"Fn::If": ["UseIam", "AWS_IAM", "NONE"]}


def _statements(role: dict[str, Any]) -> list[dict[str, Any]]:
    """Every statement of a role; a conditional one (``!If``) as its true branch."""
    out = []
    for policy in role["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            if "Fn::If" in statement:
                statement = statement["Fn::If"][1]
            out.append(statement)
    return out


def _actions(role: dict[str, Any]) -> set[str]:
    return {
        action
        for statement in _statements(role)
        for action in (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
    }


def test_each_kind_of_function_has_its_own_least_privilege_role(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    proxy, jobs = _actions(resources["ProxyRole"]), _actions(resources["JobRole"])
    assert {a for a in proxy if a.startswith("dynamodb:")} == {
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
    }
    assert {"ssm:GetParameter", "secretsmanager:GetSecretValue"} <= proxy
    # The jobs read usage and configuration and write health scores; no secrets.
    # (health scores are conditional updates: put_health is an UpdateItem).
    assert {a for a in jobs if a.startswith("dynamodb:")} == {
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:Query",
    }
    # Besides the table: the on-failure destination of a failed run, nothing else.
    assert {a for a in jobs if not a.startswith("dynamodb:")} == {"sqs:SendMessage"}
    roles = {
        name: function["Properties"]["Role"]["Fn::GetAtt"][0]
        for name, function in _of_type(template, "AWS::Serverless::Function").items()
    }
    assert roles == {
        "ProxyFunction": "ProxyRole",
        "StreamFunction": "ProxyRole",
        "HealthJobFunction": "JobRole",
        "QuotaRefreshFunction": "QuotaRole",
    }
    # The quota refresh reads credentials (its sources' references) but never deletes or
    # scans; its Query is the budget-alert retry sweep over the pending pointers.
    quota = _actions(resources["QuotaRole"])
    assert {a for a in quota if a.startswith("dynamodb:")} == {
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:Query",
    }


def test_every_function_logs_with_retention(template: dict[str, Any]) -> None:
    groups = _of_type(template, "AWS::Logs::LogGroup").values()
    named = {g["Properties"]["LogGroupName"]["Fn::Sub"] for g in groups}
    for function in _of_type(template, "AWS::Serverless::Function"):
        assert f"/aws/lambda/${{{function}}}" in named
    assert all(g["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"} for g in groups)


def test_every_schedule_retries_and_dead_letters(template: dict[str, Any]) -> None:
    schedules = [
        event["Properties"]
        for function in _of_type(template, "AWS::Serverless::Function").values()
        for event in function["Properties"].get("Events", {}).values()
        if event["Type"] == "Schedule"
    ]
    assert schedules
    for schedule in schedules:
        assert schedule["RetryPolicy"]["MaximumRetryAttempts"] >= 0
        assert "Arn" in schedule["DeadLetterConfig"]


def test_the_streaming_function_runs_the_app_under_the_web_adapter(
    template: dict[str, Any],
) -> None:
    stream = template["Resources"]["StreamFunction"]["Properties"]
    env = stream["Environment"]["Variables"]
    assert stream["Handler"] == "run.sh"
    assert stream["Timeout"] == 900
    url = template["Resources"]["StreamFunctionUrl"]["Properties"]
    assert url["InvokeMode"] == "RESPONSE_STREAM"
    assert url["TargetFunctionArn"] == {"Ref": "StreamFunction"}
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert env["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert env["AWS_LWA_READINESS_CHECK_PATH"] == "/health"
    # Each endpoint's ceiling stays inside what its platform allows.
    proxy = template["Resources"]["ProxyFunction"]["Properties"]
    assert int(proxy["Environment"]["Variables"]["EDGEPROXY_MAX_TOTAL_MS"]) < 29_000
    assert int(env["EDGEPROXY_MAX_TOTAL_MS"]) < stream["Timeout"] * 1000
    assert {"ApiUrl", "StreamUrl", "StateTableName"} <= set(template["Outputs"])


def test_the_admin_key_is_a_reference_the_proxy_reads(template: dict[str, Any]) -> None:
    for function in ("ProxyFunction", "StreamFunction"):
        env = template["Resources"][function]["Properties"]["Environment"]["Variables"]
        assert env["EDGEPROXY_ADMIN_KEY_REF"] == {"Fn::Sub": "ssm:${AdminKeyParameter}"}
    parameter = template["Parameters"]["AdminKeyParameter"]
    assert parameter["Type"] == "String"
    assert parameter["AllowedPattern"].startswith("/edgeproxy/")
    # Only the proxy role may read parameters and secrets, under the edgeproxy/ prefix.
    reads = {
        s["Sid"]: s["Resource"]["Fn::Sub"]
        for s in _statements(template["Resources"]["ProxyRole"])
        if s["Sid"] not in ("StateTableItems", "BedrockModels", "XRayWrites", "AlertTopic")
    }
    assert reads["CredentialParameters"].endswith(":parameter/edgeproxy/*")
    assert "ssm:GetParameter" not in _actions(template["Resources"]["JobRole"])


def test_every_function_uses_the_shared_layer(template: dict[str, Any]) -> None:
    (layer_name,) = _of_type(template, "AWS::Serverless::LayerVersion")
    assert template["Globals"]["Function"]["Layers"] == [{"Ref": layer_name}]
    assert template["Resources"][layer_name]["Properties"]["ContentUri"] == "shared/"


def test_the_proxy_may_invoke_only_the_configured_bedrock_models(
    template: dict[str, Any],
) -> None:
    parameter = template["Parameters"]["BedrockModelArns"]
    assert (parameter["Type"], parameter["Default"]) == ("CommaDelimitedList", "")
    assert template["Conditions"]["HasBedrockModels"] == {
        "Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", {"Ref": "BedrockModelArns"}]}, ""]}]
    }
    resources = template["Resources"]
    conditional = [
        s["Fn::If"]
        for policy in resources["ProxyRole"]["Properties"]["Policies"]
        for s in policy["PolicyDocument"]["Statement"]
        if "Fn::If" in s and s["Fn::If"][0] == "HasBedrockModels"
    ]
    assert len(conditional) == 1
    condition, statement, otherwise = conditional[0]
    assert condition == "HasBedrockModels"
    assert otherwise == {"Ref": "AWS::NoValue"}  # no models: no statement at all
    assert statement["Action"] == ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
    assert statement["Resource"] == {"Ref": "BedrockModelArns"}  # never "*"
    for role in ("JobRole", "QuotaRole"):
        assert not any(a.startswith("bedrock:") for a in _actions(resources[role]))


def test_xray_tracing_is_a_parameter_off_by_default_with_write_access_only_when_on(
    template: dict[str, Any],
) -> None:
    parameter = template["Parameters"]["XRayTracing"]
    assert (parameter["Default"], parameter["AllowedValues"]) == ("off", ["off", "on"])
    assert template["Conditions"]["UseXRay"] == {"Fn::Equals": [{"Ref": "XRayTracing"}, "on"]}
    resources = template["Resources"]
    switch = {"Fn::If": ["UseXRay", "Active", "PassThrough"]}
    for name, function in _of_type(template, "AWS::Serverless::Function").items():
        tracing = function["Properties"].get("Tracing")
        assert tracing == (switch if name in ("ProxyFunction", "StreamFunction") else None), name
    [xray] = [
        s["Fn::If"]
        for s in resources["ProxyRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
        if "Fn::If" in s and s["Fn::If"][0] == "UseXRay"
    ]
    _, statement, otherwise = xray
    assert statement["Action"] == ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    assert otherwise == {"Ref": "AWS::NoValue"}
    assert "Tracing" not in template["Globals"]["Function"]  # the jobs' roles have no X-Ray access
    for role in ("JobRole", "QuotaRole"):
        assert not any(a.startswith("xray:") for a in _actions(resources[role]))
    # The Powertools Tracer runs where the invocation's trace id reaches it: the buffered proxy.
    env = resources["ProxyFunction"]["Properties"]["Environment"]["Variables"]
    assert env["EDGEPROXY_XRAY"] == {"Ref": "XRayTracing"}


def test_budget_alerts_may_publish_only_to_the_alert_topic_and_only_when_one_is_set(
    template: dict[str, Any],
) -> None:
    parameter = template["Parameters"]["AlertTopicArn"]
    assert (parameter["Type"], parameter["Default"]) == ("String", "")  # off by default
    assert template["Conditions"]["HasAlertTopic"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AlertTopicArn"}, ""]}]
    }
    resources = template["Resources"]
    for role in ("ProxyRole", "QuotaRole"):
        [conditional] = [
            s["Fn::If"]
            for policy in resources[role]["Properties"]["Policies"]
            for s in policy["PolicyDocument"]["Statement"]
            if "Fn::If" in s and s["Fn::If"][0] == "HasAlertTopic"
        ]
        _, statement, otherwise = conditional
        assert statement["Action"] == "sns:Publish"
        assert statement["Resource"] == {"Ref": "AlertTopicArn"}  # that topic, never "*"
        assert otherwise == {"Ref": "AWS::NoValue"}  # no topic: no statement at all
        assert {a for a in _actions(resources[role]) if a.startswith("sns:")} == {"sns:Publish"}
    assert not any(a.startswith("sns:") for a in _actions(resources["JobRole"]))
    switch = {"Fn::If": ["HasAlertTopic", {"Ref": "AlertTopicArn"}, {"Ref": "AWS::NoValue"}]}
    for name in ("ProxyFunction", "StreamFunction", "QuotaRefreshFunction"):
        env = resources[name]["Properties"]["Environment"]["Variables"]
        assert env["EDGEPROXY_ALERT_TOPIC_ARN"] == switch, name
    health = resources["HealthJobFunction"]["Properties"].get("Environment", {})
    assert "EDGEPROXY_ALERT_TOPIC_ARN" not in health.get("Variables", {})
