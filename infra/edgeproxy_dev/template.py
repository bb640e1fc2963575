"""Read ``template.yaml``, the one definition of the state table (tests and local runs only).

The deployed functions get the key schema from their environment
(``EDGEPROXY_TABLE_SCHEMA``); everything that builds a table here (the
embedded DynamoDB, test fixtures, the benchmark) reads the template's
``AWS::DynamoDB::Table`` resource, so the keys cannot drift apart.

    >>> table_schema(default_template_path())
    TableSchema(pk='pk', sk='sk', ttl='expires_at')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from edgeproxy.state.dynamodb.schema import TableSchema

TABLE_TYPE = "AWS::DynamoDB::Table"


class TemplateLoader(yaml.SafeLoader):
    """A safe YAML loader that understands CloudFormation short-form tags.

    ``!Ref X`` becomes ``{"Ref": "X"}``, ``!Condition C`` ``{"Condition": "C"}``,
    ``!GetAtt A.B`` becomes ``{"Fn::GetAtt": ["A", "B"]}`` and every other
    ``!Name v`` becomes ``{"Fn::Name": v}``: the long form CloudFormation itself accepts.
    """


def _construct_intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    if suffix in ("Ref", "Condition"):
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


TemplateLoader.add_multi_constructor("!", _construct_intrinsic)


def load_template(path: Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM template, keeping intrinsic functions as data."""
    with path.open(encoding="utf-8") as stream:
        document = yaml.load(stream, Loader=TemplateLoader)  # noqa: S506 - a SafeLoader subclass
    if not isinstance(document, dict):
        raise ValueError(f"{path} is not a template (top level is not a mapping)")
    return document


def table_resource(template: dict[str, Any]) -> dict[str, Any]:
    """The properties of the template's only ``AWS::DynamoDB::Table``."""
    tables = [
        resource.get("Properties", {})
        for resource in template.get("Resources", {}).values()
        if isinstance(resource, dict) and resource.get("Type") == TABLE_TYPE
    ]
    if len(tables) != 1:
        raise ValueError(f"expected exactly one {TABLE_TYPE} resource, found {len(tables)}")
    properties: dict[str, Any] = tables[0]
    return properties


def default_template_path() -> Path:
    """The repository's ``template.yaml``."""
    # infra/edgeproxy_dev/template.py -> repository root
    return Path(__file__).resolve().parents[2] / "template.yaml"


def table_schema(path: Path) -> TableSchema:
    """The key schema and TTL attribute of the table defined in ``path``."""
    return schema_of(table_resource(load_template(path)))


def schema_of(properties: dict[str, Any]) -> TableSchema:
    """The schema of an ``AWS::DynamoDB::Table`` resource's properties."""
    keys = {k["KeyType"]: k["AttributeName"] for k in properties.get("KeySchema", [])}
    if set(keys) != {"HASH", "RANGE"}:
        raise ValueError("the state table needs a HASH and a RANGE key")
    ttl = properties.get("TimeToLiveSpecification") or {}
    if not ttl.get("Enabled") or not ttl.get("AttributeName"):
        raise ValueError("the state table needs TimeToLiveSpecification enabled")
    return TableSchema(pk=keys["HASH"], sk=keys["RANGE"], ttl=ttl["AttributeName"])


def create_table_kwargs(template_path: Path, table_name: str) -> dict[str, Any]:
    """Keyword arguments for ``create_table`` that rebuild the template's table.

    >>> kwargs = create_table_kwargs(default_template_path(), "test-table")
    >>> kwargs["BillingMode"]
    'PAY_PER_REQUEST'
    """
    properties = table_resource(load_template(template_path))
    kwargs: dict[str, Any] = {
        "TableName": table_name,
        "KeySchema": properties["KeySchema"],
        "AttributeDefinitions": properties["AttributeDefinitions"],
        "BillingMode": properties.get("BillingMode", "PROVISIONED"),
    }
    if "ProvisionedThroughput" in properties:
        kwargs["ProvisionedThroughput"] = properties["ProvisionedThroughput"]
    return kwargs
