"""The key schema has one source, template.yaml, and every reader agrees with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy_dev.template import (
    create_table_kwargs,
    default_template_path,
    load_template,
    schema_of,
    table_resource,
    table_schema,
)

TEMPLATE = default_template_path()


def test_from_template_reads_keys_and_ttl() -> None:
    assert table_schema(TEMPLATE) == TableSchema("pk", "sk", "expires_at")


def test_globals_env_value_agrees_with_table_resource() -> None:
    template = load_template(TEMPLATE)
    env = template["Globals"]["Function"]["Environment"]["Variables"]

    assert TableSchema.from_env_value(env["EDGEPROXY_TABLE_SCHEMA"]) == table_schema(TEMPLATE)
    assert env["EDGEPROXY_TABLE"] == {"Ref": _table_logical_id(template)}


def test_the_env_value_is_read_with_its_spaces_trimmed() -> None:
    assert TableSchema.from_env_value("id,kind,ttl") == TableSchema("id", "kind", "ttl")
    spaced = TableSchema.from_env_value(" pk , sk , expires_at ")
    assert spaced == TableSchema("pk", "sk", "expires_at")


@pytest.mark.parametrize("value", ["", "pk,sk", "pk,sk,ttl,extra", "pk,,ttl"])
def test_malformed_env_value_is_rejected(value: str) -> None:
    with pytest.raises(ValueError, match="pk,sk,ttl"):
        TableSchema.from_env_value(value)


def test_loader_turns_short_tags_into_long_form(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "A: !Ref Table\n"
        "B: !GetAtt Table.Arn\n"
        "C: !Sub 'arn:${AWS::Partition}:x'\n"
        "D: !Select [0, !GetAZs '']\n"
        "E: !If [Cond, {X: 1}, !Ref AWS::NoValue]\n"
    )
    assert load_template(path) == {
        "A": {"Ref": "Table"},
        "B": {"Fn::GetAtt": ["Table", "Arn"]},
        "C": {"Fn::Sub": "arn:${AWS::Partition}:x"},
        "D": {"Fn::Select": [0, {"Fn::GetAZs": ""}]},
        "E": {"Fn::If": ["Cond", {"X": 1}, {"Ref": "AWS::NoValue"}]},
    }


def test_loader_stays_safe(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("A: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(yaml.constructor.ConstructorError, match="python/object"):
        load_template(path)


def test_create_table_kwargs_copy_the_resource() -> None:
    kwargs = create_table_kwargs(TEMPLATE, "t-1")
    resource = table_resource(load_template(TEMPLATE))

    assert kwargs == {
        "TableName": "t-1",
        "KeySchema": resource["KeySchema"],
        "AttributeDefinitions": resource["AttributeDefinitions"],
        "BillingMode": "PAY_PER_REQUEST",
    }


def test_table_needs_ttl() -> None:
    properties = table_resource(load_template(TEMPLATE))
    without_ttl = {k: v for k, v in properties.items() if k != "TimeToLiveSpecification"}
    with pytest.raises(ValueError, match="TimeToLive"):
        schema_of(without_ttl)


def test_exactly_one_table_is_required() -> None:
    table = {"Type": "AWS::DynamoDB::Table", "Properties": {}}
    with pytest.raises(ValueError, match="found 2"):
        table_resource({"Resources": {"A": table, "B": table}})
    with pytest.raises(ValueError, match="found 0"):
        table_resource({"Resources": {}})


def _table_logical_id(template: dict[str, Any]) -> str:
    (logical_id,) = (
        str(name)
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::DynamoDB::Table"
    )
    return logical_id
