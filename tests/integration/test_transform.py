"""What CloudFormation deploys from template.yaml, for every parameter combination.

The SAM transform (aws-sam-translator, run offline as ``sam deploy`` would
after ``sam package``) turns the template into plain CloudFormation; the
stack's conditions are then evaluated for the combination's parameters
(``edgeproxy_dev.conditions``). The tests read the resources that result.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from edgeproxy_dev.conditions import deployed
from edgeproxy_dev.template import default_template_path, load_template
from edgeproxy_dev.transform import (
    COMBINATIONS,
    parameter_combinations,
    parameter_values,
    transform_template,
)

Resources = dict[str, dict[str, Any]]
TOPIC = COMBINATIONS["AlarmTopicArn"][1]
MODEL = COMBINATIONS["BedrockModelArns"][1]


def deploy(overrides: dict[str, str]) -> Resources:
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    template = load_template(default_template_path())
    return deployed(transform_template(overrides), parameter_values(template, overrides))


def _key(overrides: dict[str, str]) -> tuple[str, str, str]:
    return (overrides["AuthMode"], overrides["BedrockModelArns"], overrides["AlarmTopicArn"])


@pytest.fixture(scope="module")
def stacks() -> dict[tuple[str, str, str], Resources]:
    """Every combination's deployed resources (the transform raises on a rejected template)."""
    return {_key(o): deploy(o) for o in parameter_combinations()}


def _of_type(resources: Resources, kind: str) -> Resources:
    return {n: r for n, r in resources.items() if r["Type"] == kind}


def _props(resources: Resources, name: str) -> dict[str, Any]:
    properties: dict[str, Any] = resources[name]["Properties"]
    return properties


def _public_permissions(resources: Resources) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in _of_type(resources, "AWS::Lambda::Permission").values()
        if r["Properties"]["Principal"] == "*"
    ]


def _statements(resources: Resources, role: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in _props(resources, role)["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def test_all_eight_combinations_transform(stacks: dict[tuple[str, str, str], Resources]) -> None:
    assert len(stacks) == 8
    for resources in stacks.values():
        assert "StreamFunctionUrl" in resources
        assert "HttpApi" in resources


@pytest.mark.parametrize("bedrock", COMBINATIONS["BedrockModelArns"])
def test_in_keys_mode_the_streaming_url_is_public_with_both_permissions(
    stacks: dict[tuple[str, str, str], Resources], bedrock: str
) -> None:
    resources = stacks[("keys", bedrock, "")]
    url = _props(resources, "StreamFunctionUrl")
    assert (url["AuthType"], url["InvokeMode"]) == ("NONE", "RESPONSE_STREAM")
    stream = {"Ref": "StreamFunction"}
    assert url["TargetFunctionArn"] == stream
    by_action = {p["Action"]: p for p in _public_permissions(resources)}
    # Without both, a NONE-auth Function URL answers 403 to everyone.
    assert by_action == {
        "lambda:InvokeFunctionUrl": {
            "Action": "lambda:InvokeFunctionUrl",
            "FunctionName": stream,
            "Principal": "*",
            "FunctionUrlAuthType": "NONE",
        },
        "lambda:InvokeFunction": {
            "Action": "lambda:InvokeFunction",
            "FunctionName": stream,
            "Principal": "*",
            "InvokedViaFunctionUrl": True,
        },
    }


@pytest.mark.parametrize("bedrock", COMBINATIONS["BedrockModelArns"])
def test_in_iam_mode_the_streaming_url_needs_sigv4_and_nothing_is_public(
    stacks: dict[tuple[str, str, str], Resources], bedrock: str
) -> None:
    resources = stacks[("iam", bedrock, "")]
    assert _props(resources, "StreamFunctionUrl")["AuthType"] == "AWS_IAM"
    assert _public_permissions(resources) == []


def _routes(resources: Resources) -> dict[str, dict[str, Any]]:
    body = _props(resources, "HttpApi")["Body"]
    return {
        f"{method} {path}": operation
        for path, item in body["paths"].items()
        for method, operation in item.items()
    }


def test_the_http_api_requires_iam_on_every_route_in_iam_mode_only(
    stacks: dict[tuple[str, str, str], Resources],
) -> None:
    for (mode, _, _), resources in stacks.items():
        routes = _routes(resources)
        assert list(routes) == ["x-amazon-apigateway-any-method /{proxy+}"]
        for operation in routes.values():
            # The published version's alias (test_published_version.py), never $LATEST.
            assert (
                "${ProxyFunctionAliaslive}"
                in operation["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
            )
            if mode == "iam":
                assert operation["security"] == [{"AWS_IAM": []}]
            else:
                assert "security" not in operation
        if mode == "iam":
            scheme = _props(resources, "HttpApi")["Body"]["components"]["securitySchemes"]
            assert scheme["AWS_IAM"]["x-amazon-apigateway-authtype"] == "awsSigv4"
        # The gateway's own throttle and the route's permission stay in both modes.
        stage = _props(resources, "HttpApiStage")
        assert stage["DefaultRouteSettings"]["ThrottlingRateLimit"] == 200
        assert "ProxyFunctionProxyPermission" in resources


def test_the_bedrock_statement_exists_only_with_model_arns(
    stacks: dict[tuple[str, str, str], Resources],
) -> None:
    for (_, bedrock, _), resources in stacks.items():
        statements = [s for s in _statements(resources, "ProxyRole") if s["Sid"] == "BedrockModels"]
        if bedrock:
            (statement,) = statements
            assert statement["Resource"] == [MODEL]
        else:
            assert statements == []


def test_alarms_notify_only_with_a_topic(stacks: dict[tuple[str, str, str], Resources]) -> None:
    for (_, _, topic), resources in stacks.items():
        alarms = _of_type(resources, "AWS::CloudWatch::Alarm")
        assert len(alarms) >= 9
        for name, alarm in alarms.items():
            if topic:
                assert alarm["Properties"]["AlarmActions"] == [TOPIC], name
            else:
                assert "AlarmActions" not in alarm["Properties"], name


def _function_named(resources: Resources, name: str) -> dict[str, Any]:
    return _props(resources, name)


def test_failed_job_runs_are_not_retried_and_land_in_the_dead_letter_queue(
    stacks: dict[tuple[str, str, str], Resources],
) -> None:
    resources = stacks[("keys", "", "")]
    queue_arn = {"Fn::GetAtt": ["JobDeadLetters", "Arn"]}
    configs = {
        r["Properties"]["FunctionName"]["Ref"]: r["Properties"]
        for r in _of_type(resources, "AWS::Lambda::EventInvokeConfig").values()
    }
    assert set(configs) == {"HealthJobFunction", "QuotaRefreshFunction"}
    for function, config in configs.items():
        assert config["MaximumRetryAttempts"] == 0
        assert config["DestinationConfig"]["OnFailure"]["Destination"] == queue_arn
        # The role (not the queue policy) carries an async invocation's destination write.
        role = _function_named(resources, function)["Role"]["Fn::GetAtt"][0]
        sends = [
            s
            for s in _statements(resources, role)
            if s["Action"] == "sqs:SendMessage" and s["Resource"] == queue_arn
        ]
        assert len(sends) == 1, function
    rules = _of_type(resources, "AWS::Events::Rule")
    assert {
        r["Properties"]["Targets"][0]["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
        for r in rules.values()
    } == {"JobDeadLetters"}
    (policy,) = _of_type(resources, "AWS::SQS::QueuePolicy").values()
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "events.amazonaws.com"}
    sources = statement["Condition"]["ArnEquals"]["aws:SourceArn"]
    # Exactly the stack's schedule rules may dead-letter into the queue.
    assert sorted(s["Fn::GetAtt"][0] for s in sources) == sorted(rules)
    assert all(s["Fn::GetAtt"][1] == "Arn" for s in sources)


def test_reserved_concurrency(stacks: dict[tuple[str, str, str], Resources]) -> None:
    resources = stacks[("keys", "", "")]
    assert _props(resources, "HealthJobFunction")["ReservedConcurrentExecutions"] == 1
    template = load_template(default_template_path())
    default = template["Parameters"]["StreamReservedConcurrency"]["Default"]
    assert default == 100
    assert _props(resources, "StreamFunction")["ReservedConcurrentExecutions"] == default
    overrides = {"AuthMode": "keys", "BedrockModelArns": "", "AlarmTopicArn": ""}
    capped = deploy({**overrides, "StreamReservedConcurrency": "7"})
    assert _props(capped, "StreamFunction")["ReservedConcurrentExecutions"] == "7"
    # 0 means unreserved (never "reserve zero", which would throttle every stream).
    unreserved = deploy({**overrides, "StreamReservedConcurrency": "0"})
    assert "ReservedConcurrentExecutions" not in _props(unreserved, "StreamFunction")


def _alarm_on(resources: Resources, metric: str, function: str) -> dict[str, Any]:
    (found,) = [
        a["Properties"]
        for a in _of_type(resources, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == metric
        and a["Properties"]["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function}}]
    ]
    return found


def test_url_errors_near_timeouts_and_table_throttles_alarm(
    stacks: dict[tuple[str, str, str], Resources],
) -> None:
    resources = stacks[("keys", "", TOPIC)]
    url = _alarm_on(resources, "Url5xxCount", "StreamFunction")
    assert (url["Namespace"], url["Statistic"], url["Threshold"]) == ("AWS/Lambda", "Sum", 0)
    for function in ("ProxyFunction", "StreamFunction"):
        alarm = _alarm_on(resources, "Duration", function)
        timeout_ms = _props(resources, function)["Timeout"] * 1000
        assert alarm["ExtendedStatistic"] == "p99"
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
        assert 0.8 * timeout_ms <= alarm["Threshold"] < timeout_ms, function
    throttled = {
        m["MetricStat"]["Metric"]["MetricName"]: m["MetricStat"]["Metric"]
        for a in _of_type(resources, "AWS::CloudWatch::Alarm").values()
        for m in a["Properties"].get("Metrics", [])
        if "MetricStat" in m and m["MetricStat"]["Metric"]["Namespace"] == "AWS/DynamoDB"
    }
    assert set(throttled) == {"ReadThrottleEvents", "WriteThrottleEvents"}
    for metric in throttled.values():
        assert metric["Dimensions"] == [{"Name": "TableName", "Value": {"Ref": "StateTable"}}]


def test_the_table_is_protected_and_log_groups_go_with_the_stack(
    stacks: dict[tuple[str, str, str], Resources],
) -> None:
    resources = stacks[("keys", "", "")]
    table = resources["StateTable"]
    assert table["Properties"]["DeletionProtectionEnabled"] is True
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Retain", "Retain")
    groups = _of_type(resources, "AWS::Logs::LogGroup")
    assert len(groups) == 5
    for name, group in groups.items():
        assert (group.get("DeletionPolicy"), group.get("UpdateReplacePolicy")) == (
            "Delete",
            "Delete",
        ), name
