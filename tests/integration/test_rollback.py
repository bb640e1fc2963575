"""A first create that fails, rehearsed offline: what its rollback leaves (nothing), and
what a stack delete keeps (the state table), for every parameter combination.

The resources are what CloudFormation would create from the transformed template
(``edgeproxy_dev.conditions``); ``edgeproxy_dev.rollback`` applies CloudFormation's
deletion rules to them. The failure of a new account's first deploy is the streaming
function's reserved concurrency; every other resource failing is rehearsed too.
"""

from __future__ import annotations

import logging
import tomllib
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from edgeproxy_dev.aws import client_kwargs
from edgeproxy_dev.conditions import deployed
from edgeproxy_dev.rollback import dependents, failed_create, stack_delete
from edgeproxy_dev.template import default_template_path, load_template
from edgeproxy_dev.transform import parameter_combinations, parameter_values, transform_template

Resources = dict[str, dict[str, Any]]
SAMCONFIG = default_template_path().with_name("samconfig.toml")


def _deploy(overrides: dict[str, str], path: Path | None = None) -> Resources:
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    template = load_template(path or default_template_path())
    return deployed(transform_template(overrides, path), parameter_values(template, overrides))


@pytest.fixture(scope="module")
def every() -> list[tuple[dict[str, str], Resources]]:
    return [(o, _deploy(o)) for o in parameter_combinations()]


def _on_failure() -> str:
    deploy = tomllib.loads(SAMCONFIG.read_text())["default"]["deploy"]["parameters"]
    on_failure: str = deploy["on_failure"]
    return on_failure


def test_sam_deploy_deletes_a_stack_whose_first_create_failed() -> None:
    # DELETE: a failed create's stack is deleted after its rollback, so the next
    # `sam deploy` under the same name creates it anew (ROLLBACK would leave it in
    # ROLLBACK_COMPLETE, where every deploy fails until someone deletes it); a failed
    # update still rolls back to the stack as it was.
    assert _on_failure() == "DELETE"


def test_a_failed_first_create_leaves_nothing_and_frees_its_name(
    every: list[tuple[dict[str, str], Resources]],
) -> None:
    on_failure = _on_failure()
    for overrides, resources in every:
        if overrides["TableDeletionProtection"] == "on":
            continue  # an update's setting: see the next test
        for failed in resources:
            outcome = failed_create(resources, failed, on_failure)
            assert (outcome.status, outcome.left, outcome.name_free) == (
                "ROLLBACK_COMPLETE",
                {},
                True,
            ), (failed, overrides)


def test_deletion_protection_on_a_first_create_would_keep_the_table_and_the_stack(
    every: list[tuple[dict[str, str], Resources]],
) -> None:
    # Why TableDeletionProtection is off by default and turned on with an update.
    protected = [r for o, r in every if o["TableDeletionProtection"] == "on"]
    assert protected
    for resources in protected:
        outcome = failed_create(resources, "StreamFunction", _on_failure())
        assert outcome.status == "ROLLBACK_FAILED"
        assert set(outcome.left) == {"StateTable"}
        assert not outcome.name_free


def test_a_stack_delete_keeps_the_table_and_only_the_table(
    every: list[tuple[dict[str, str], Resources]],
) -> None:
    for overrides, resources in every:
        outcome = stack_delete(resources)
        assert outcome.status == "DELETE_COMPLETE", overrides
        assert outcome.left == {"StateTable": "DeletionPolicy RetainExceptOnCreate"}


@pytest.mark.parametrize("protection", ["off", "on"])
def test_the_rollbacks_delete_of_the_table_as_dynamodb_answers_it(
    dynamo_endpoint: str, protection: str
) -> None:
    # The table as the stack creates it (its deployed properties, a cap included), then
    # the rollback's DeleteTable: DynamoDB (the embedded moto) refuses it exactly when
    # the model says the rollback fails.
    overrides = {"TableDeletionProtection": protection, "TableMaxWriteRequestUnits": "1000"}
    resources = _deploy(overrides)
    table = resources["StateTable"]["Properties"]
    client = boto3.client("dynamodb", **client_kwargs(dynamo_endpoint))
    name = f"rollback-{protection}"
    client.create_table(
        TableName=name,
        **{k: table[k] for k in ("AttributeDefinitions", "KeySchema", "BillingMode")},
        DeletionProtectionEnabled=table["DeletionProtectionEnabled"],
        OnDemandThroughput={k: int(v) for k, v in table["OnDemandThroughput"].items()},
    )
    outcome = failed_create(resources, "StreamFunction", _on_failure())
    if protection == "off":
        client.delete_table(TableName=name)
        assert name not in client.list_tables()["TableNames"]
        assert "StateTable" not in outcome.left
    else:
        with pytest.raises(ClientError) as refused:
            client.delete_table(TableName=name)
        error = refused.value.response["Error"]
        assert error["Code"] == "ValidationException"
        assert "DeletionProtectionEnabled is set to True" in error["Message"]
        assert outcome.left["StateTable"].startswith("deletion protection")
        client.update_table(TableName=name, DeletionProtectionEnabled=False)
        client.delete_table(TableName=name)


def test_the_model_follows_dependencies_and_policies() -> None:
    # The rules on their own: a Retain-ed table and layer outlive a rollback (the stack as
    # it was before: each retry made another table), deletion protection fails it, and
    # what depends on the failed resource was never created.
    resources: Resources = {
        "Table": {
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": "Retain",
            "Properties": {"DeletionProtectionEnabled": True},
        },
        "Layer": {"Type": "AWS::Lambda::LayerVersion", "DeletionPolicy": "Retain"},
        "Fn": {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Layers": [{"Ref": "Layer"}], "Env": {"Fn::Sub": "${Table}"}},
        },
        "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"Name": {"Fn::Sub": "/x/${Fn}"}}},
        "Retained": {
            "Type": "AWS::SQS::Queue",
            "DeletionPolicy": "Retain",
            "DependsOn": "Fn",
        },
    }
    assert dependents(resources, "Table") == {"Fn", "Logs", "Retained"}
    outcome = failed_create(resources, "Fn", "DELETE")
    assert outcome.left == {"Layer": "DeletionPolicy Retain", "Table": "DeletionPolicy Retain"}
    assert (outcome.status, outcome.name_free) == ("ROLLBACK_COMPLETE", True)
    resources["Table"]["DeletionPolicy"] = "RetainExceptOnCreate"
    outcome = failed_create(resources, "Fn", "DELETE")
    assert outcome.status == "ROLLBACK_FAILED"
    assert outcome.left["Table"].startswith("deletion protection")
    assert not outcome.name_free
    assert not failed_create(resources, "Layer", "ROLLBACK").name_free


def test_the_template_before_this_change_left_its_table_and_layer(tmp_path: Path) -> None:
    # The same rehearsal on the template as it was (Retain, protection on, SAM's default
    # layer retention): the rehearsal sees what a new account's first deploy left behind.
    text = default_template_path().read_text()
    old = (
        text.replace("DeletionPolicy: RetainExceptOnCreate", "DeletionPolicy: Retain")
        .replace(
            "DeletionProtectionEnabled: !If [UseTableDeletionProtection, true, false]",
            "DeletionProtectionEnabled: true",
        )
        .replace("      RetentionPolicy: Delete\n", "")
    )
    assert old != text
    path = tmp_path / "template.yaml"
    path.write_text(old)
    resources = _deploy({}, path)
    outcome = failed_create(resources, "StreamFunction", "ROLLBACK")
    assert {n: resources[n]["Type"] for n in outcome.left} == {
        "StateTable": "AWS::DynamoDB::Table",
        next(n for n in resources if n.startswith("SharedLayer")): "AWS::Lambda::LayerVersion",
    }
    assert not outcome.name_free
