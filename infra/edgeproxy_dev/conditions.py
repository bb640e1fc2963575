"""What CloudFormation creates from a transformed template: its conditions evaluated.

The SAM transform leaves ``Conditions``, resources' ``Condition`` attributes and
``Fn::If`` in place; CloudFormation evaluates them with the stack's parameters.
This module does the same for the few intrinsic functions conditions use here
(``Fn::Equals``, ``Fn::Not``, ``Fn::And``, ``Fn::Or``, ``Condition``, ``Ref`` of a
parameter, ``Fn::Join`` of a list parameter), so tests can ask what a given
parameter combination deploys.

    >>> template = {
    ...     "Conditions": {"UseIam": {"Fn::Equals": [{"Ref": "AuthMode"}, "iam"]}},
    ...     "Resources": {
    ...         "A": {"Type": "T", "Condition": "UseIam"},
    ...         "B": {"Type": "T", "Properties": {"X": {"Fn::If": ["UseIam", 1, {"Ref": "AWS::NoValue"}]}}},
    ...     },
    ... }
    >>> deployed(template, {"AuthMode": "keys"})
    {'B': {'Type': 'T', 'Properties': {}}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_NO_VALUE = {"Ref": "AWS::NoValue"}
_DROP = object()


def _value(node: Any, parameters: Mapping[str, Any]) -> Any:
    """A condition operand: a literal, a parameter's value, or a join of one."""
    if isinstance(node, dict) and set(node) == {"Ref"}:
        return parameters[node["Ref"]]
    if isinstance(node, dict) and set(node) == {"Fn::Join"}:
        separator, parts = node["Fn::Join"]
        values = _value(parts, parameters)
        if isinstance(values, str):  # a CommaDelimitedList given as one string
            values = values.split(",") if values else []
        return separator.join(str(_value(v, parameters)) for v in values)
    return node


def evaluate_conditions(
    template: Mapping[str, Any], parameters: Mapping[str, Any]
) -> dict[str, bool]:
    """Each of the template's conditions, true or false for ``parameters``."""
    definitions = template.get("Conditions", {})
    results: dict[str, bool] = {}

    def truth(node: Any) -> bool:
        if not isinstance(node, dict) or len(node) != 1:
            raise ValueError(f"not a condition: {node!r}")
        ((function, args),) = node.items()
        if function == "Condition":
            if args not in results:
                results[args] = truth(definitions[args])
            return results[args]
        if function == "Fn::Equals":
            left, right = (_value(a, parameters) for a in args)
            return bool(str(left) == str(right))
        if function == "Fn::Not":
            return not truth(args[0])
        if function == "Fn::And":
            return all(truth(a) for a in args)
        if function == "Fn::Or":
            return any(truth(a) for a in args)
        raise ValueError(f"unsupported condition function {function}")

    for name in definitions:
        truth({"Condition": name})
    return results


def _resolve(node: Any, conditions: Mapping[str, bool], parameters: Mapping[str, Any]) -> Any:
    if isinstance(node, dict):
        if node == _NO_VALUE:
            return _DROP
        if set(node) == {"Ref"} and node["Ref"] in parameters:
            return parameters[node["Ref"]]
        if set(node) == {"Fn::If"}:
            name, when_true, when_false = node["Fn::If"]
            chosen = when_true if conditions[name] else when_false
            return _resolve(chosen, conditions, parameters)
        out = {}
        for key, value in node.items():
            resolved = _resolve(value, conditions, parameters)
            if resolved is not _DROP:
                out[key] = resolved
        return out
    if isinstance(node, list):
        resolved = (_resolve(v, conditions, parameters) for v in node)
        return [r for r in resolved if r is not _DROP]
    return node


def _typed(template: Mapping[str, Any], parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Parameter values as a ``Ref`` gives them: a CommaDelimitedList as a list."""
    types = {n: p.get("Type") for n, p in template.get("Parameters", {}).items()}
    out = dict(parameters)
    for name, value in parameters.items():
        if types.get(name) == "CommaDelimitedList" and isinstance(value, str):
            out[name] = value.split(",") if value else [""]
    return out


def deployed(template: Mapping[str, Any], parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The resources CloudFormation creates for ``parameters``.

    Every ``Fn::If`` and ``AWS::NoValue`` is resolved, and every ``Ref`` of a
    parameter replaced by its value; references to resources stay as they are.
    """
    conditions = evaluate_conditions(template, parameters)
    values = _typed(template, parameters)
    resources: dict[str, Any] = {}
    for name, resource in template.get("Resources", {}).items():
        condition = resource.get("Condition")
        if condition is not None and not conditions[condition]:
            continue
        body = {k: v for k, v in resource.items() if k != "Condition"}
        resources[name] = _resolve(body, conditions, values)
    return resources
