"""Each function of the stack as CloudFormation would deploy it: its role's statements, its environment.

From the SAM transform's output (``transform``) with the intrinsics resolved
(``intrinsics``) for one stack in moto's account and region, whose state
table is named ``table``:

    >>> functions = deployed_functions("edgeproxy-state", {"AuthMode": "keys"})  # doctest: +SKIP
    >>> functions["HealthJobFunction"].role
    'JobRole'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgeproxy_dev import iam_actions
from edgeproxy_dev.intrinsics import Stack
from edgeproxy_dev.template import default_template_path, load_template
from edgeproxy_dev.transform import ACCOUNT, REGION, parameter_values, transform_template


@dataclass(frozen=True)
class Function:
    """One ``AWS::Lambda::Function`` of the transformed template, resolved."""

    name: str
    role: str
    # The role's inline policy statements (its managed policies are Lambda's own logging).
    statements: list[dict[str, Any]]
    environment: dict[str, str]

    def actions(self) -> set[str]:
        """Every action the role's inline statements allow."""
        out: set[str] = set()
        for statement in self.statements:
            action = statement["Action"]
            out.update(action if isinstance(action, list) else [action])
        return out


def stack_values(template: Mapping[str, Any], overrides: Mapping[str, str], table: str) -> Stack:
    """The values of one deployed stack: parameters, the table's name and ARN, role ARNs."""
    values = parameter_values(template, overrides)
    for name, spec in template.get("Parameters", {}).items():
        if spec.get("Type") == "CommaDelimitedList" and isinstance(values.get(name), str):
            values[name] = [v for v in values[name].split(",") if v]
    refs = {**values, "StateTable": table}
    attributes = {"StateTable.Arn": iam_actions.table_arn(table, region=REGION, account=ACCOUNT)}
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role":
            attributes[f"{name}.Arn"] = f"arn:aws:iam::{ACCOUNT}:role/{name}"
        elif resource["Type"] == "AWS::SQS::Queue":  # the jobs' on-failure destination
            attributes[f"{name}.Arn"] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
    return Stack(refs, attributes, template.get("Conditions", {}))


def deployed_functions(
    table: str, overrides: Mapping[str, str] | None = None
) -> dict[str, Function]:
    """Every function of the transformed template, by logical id."""
    overrides = overrides or {}
    template = load_template(default_template_path())
    stack = stack_values(template, overrides, table)
    transformed = transform_template(overrides)
    resources = transformed["Resources"]
    out = {}
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        properties = resource["Properties"]
        role = properties["Role"]["Fn::GetAtt"][0]
        statements = [
            statement
            for policy in stack.resolve(resources[role]["Properties"].get("Policies", []))
            for statement in policy["PolicyDocument"]["Statement"]
        ]
        variables = stack.resolve(properties.get("Environment", {}).get("Variables", {}))
        out[name] = Function(name, role, statements, {k: str(v) for k, v in variables.items()})
    return out
