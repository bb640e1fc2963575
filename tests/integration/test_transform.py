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
ALERTS = COMBINATIONS["AlertTopicArn"][1]
MODEL = COMBINATIONS["BedrockModelArns"][1]


def deploy(overrides: dict[str, str]) -> Resources:
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    template = load_template(default_template_path())
    return deployed(transform_template(overrides), parameter_values(template, overrides))


def _key(overrides: dict[str, str]) -> tuple[str, str, str]:
    return (overrides["AuthMode"], overrides["BedrockModelArns"], overrides["AlarmTopicArn"])


@pytest.fixture(scope="module")
def every() -> list[tuple[dict[str, str], Resources]]:
    """Every combination with its deployed resources (the transform raises on a rejected one)."""
    return [(o, deploy(o)) for o in parameter_combinations()]


@pytest.fixture(scope="module")
def stacks(
    every: list[tuple[dict[str, str], Resources]],
) -> dict[tuple[str, str, str], Resources]:
    """The eight combinations of the first three parameters (the table unprotected)."""
    return {_key(o): r for o, r in every if o["TableDeletionProtection"] == "off"}


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


def test_all_sixteen_combinations_transform(
    every: list[tuple[dict[str, str], Resources]], stacks: dict[tuple[str, str, str], Resources]
) -> None:
    assert (len(every), len(stacks)) == (16, 8)
    for _, resources in every:
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


_RESERVING = {
    "StreamFunction": "StreamReservedConcurrency",
    "HealthJobFunction": "HealthJobReservedConcurrency",
}


def test_nothing_is_reserved_unless_a_parameter_reserves_it(
    every: list[tuple[dict[str, str], Resources]],
) -> None:
    defaults, resources = every[0]
    assert all(v == COMBINATIONS[k][0] for k, v in defaults.items())
    # With the defaults no function reserves concurrency: a new account (quota 10 or 50,
    # of which Lambda keeps 100 unreserved where it can) can create the stack.
    functions = _of_type(resources, "AWS::Lambda::Function")
    assert functions
    assert all("ReservedConcurrentExecutions" not in f["Properties"] for f in functions.values())
    for overrides, resources in every:
        for function, parameter in _RESERVING.items():
            value = overrides[parameter]
            got = _props(resources, function).get("ReservedConcurrentExecutions")
            # 0 means unreserved (never "reserve zero", which would throttle every call).
            assert (got is None) if value == "0" else (str(got) == value), (function, overrides)
        others = set(_of_type(resources, "AWS::Lambda::Function")) - set(_RESERVING)
        assert all("ReservedConcurrentExecutions" not in _props(resources, f) for f in others)
    template = load_template(default_template_path())
    assert all(template["Parameters"][p]["Default"] == 0 for p in _RESERVING.values())
    overrides = {"AuthMode": "keys", "BedrockModelArns": "", "AlarmTopicArn": ""}
    capped = deploy({**overrides, "StreamReservedConcurrency": "7"})
    assert _props(capped, "StreamFunction")["ReservedConcurrentExecutions"] == "7"


def test_the_table_caps_its_on_demand_throughput_only_when_asked(
    every: list[tuple[dict[str, str], Resources]],
) -> None:
    seen = set()
    for overrides, resources in every:
        caps = {
            unit: overrides[f"Table{unit}"]
            for unit in ("MaxReadRequestUnits", "MaxWriteRequestUnits")
            if overrides[f"Table{unit}"] != "0"
        }
        table = _props(resources, "StateTable")
        assert table.get("OnDemandThroughput") == (caps or None), overrides
        seen.add(tuple(sorted(caps)))
    assert len(seen) == 4  # neither, either one, both


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


def test_the_table_outlives_the_stack_but_not_a_failed_create_and_the_rest_goes(
    every: list[tuple[dict[str, str], Resources]],
) -> None:
    for overrides, resources in every:
        table = resources["StateTable"]
        assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == (
            "RetainExceptOnCreate",
            "Retain",
        )
        protected = overrides["TableDeletionProtection"] == "on"
        assert table["Properties"]["DeletionProtectionEnabled"] is protected
        groups = _of_type(resources, "AWS::Logs::LogGroup")
        assert len(groups) == 5
        for name, group in groups.items():
            assert (group.get("DeletionPolicy"), group.get("UpdateReplacePolicy")) == (
                "Delete",
                "Delete",
            ), name
        # SAM's RetentionPolicy: Delete; an old layer version goes once the functions moved on.
        (layer,) = _of_type(resources, "AWS::Lambda::LayerVersion").values()
        assert layer["DeletionPolicy"] == "Delete"
        kept = {
            n for n, r in resources.items() if r.get("DeletionPolicy") in ("Retain", "Snapshot")
        }
        assert kept == set()


def test_the_alert_topic_may_be_published_to_exactly_when_it_is_set(
    every: list[tuple[dict[str, str], Resources]],
) -> None:
    assert {o["AlertTopicArn"] for o, _ in every} == {"", ALERTS}  # both values transformed
    for overrides, resources in every:
        topic = overrides["AlertTopicArn"]
        for role in ("ProxyRole", "QuotaRole", "JobRole"):
            publishing = [
                s for s in _statements(resources, role) if "sns:Publish" in str(s["Action"])
            ]
            if topic and role != "JobRole":
                assert publishing == [
                    {"Sid": "AlertTopic", "Effect": "Allow", "Action": "sns:Publish",
                     "Resource": topic}
                ], (role, overrides)  # fmt: skip
            else:
                assert publishing == [], (role, overrides)
        for function in ("ProxyFunction", "StreamFunction", "QuotaRefreshFunction"):
            env = _props(resources, function)["Environment"]["Variables"]
            if topic:
                assert env["EDGEPROXY_ALERT_TOPIC_ARN"] == topic
            else:
                assert "EDGEPROXY_ALERT_TOPIC_ARN" not in env
