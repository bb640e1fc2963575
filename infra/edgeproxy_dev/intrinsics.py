"""Resolve the CloudFormation intrinsics a transformed ``template.yaml`` uses, offline.

What CloudFormation would compute at deploy time for one stack: parameter and
pseudo-parameter ``Ref``, ``Ref`` and ``Fn::GetAtt`` of the resources the
caller names (a table's name and ARN), ``Fn::Sub``, ``Fn::Join``, ``Fn::If``
on the template's conditions, and ``AWS::NoValue`` dropped from lists and
mappings. Anything else raises ``Unresolvable``: a new intrinsic in the
template must be taught here, not passed through.

    >>> stack = Stack({"Stage": "dev"}, {}, {})
    >>> stack.resolve({"Fn::Sub": "/${Stage}/x"})
    '/dev/x'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_NO_VALUE = object()
_SUB = re.compile(r"\$\{([^}!]+)\}")


class Unresolvable(ValueError):
    """An intrinsic (or a reference) this resolver does not know."""


class Stack:
    """One stack's values: ``refs`` (parameters, pseudo parameters, resources), attributes, conditions.

    ``attributes`` maps ``"Resource.Attribute"`` to its value; ``conditions``
    are the template's ``Conditions`` section, evaluated on first use.
    """

    def __init__(
        self,
        refs: Mapping[str, Any],
        attributes: Mapping[str, Any],
        conditions: Mapping[str, Any],
    ) -> None:
        self._refs = dict(refs)
        self._attributes = dict(attributes)
        self._conditions = dict(conditions)

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic replaced by what CloudFormation would compute."""
        out = self._resolve(value)
        if out is _NO_VALUE:
            raise Unresolvable("the whole value is AWS::NoValue")
        return out

    def condition(self, name: str) -> bool:
        """The value of the template's condition ``name``."""
        if name not in self._conditions:
            raise Unresolvable(f"no condition {name!r}")
        return self._truth(self._conditions[name])

    def _truth(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if not (isinstance(value, dict) and len(value) == 1):
            raise Unresolvable(f"not a condition: {value!r}")
        ((function, args),) = value.items()
        if function == "Condition":
            return self.condition(args)
        if function == "Fn::Equals":
            left, right = (self._resolve(a) for a in args)
            return bool(left == right)
        if function == "Fn::Not":
            return not self._truth(args[0])
        if function == "Fn::And":
            return all(self._truth(a) for a in args)
        if function == "Fn::Or":
            return any(self._truth(a) for a in args)
        raise Unresolvable(f"condition function {function}")

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            resolved = [self._resolve(v) for v in value]
            return [v for v in resolved if v is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, args),) = value.items()
            if key == "Ref" or key.startswith("Fn::"):
                return self._intrinsic(key, args)
        items = {k: self._resolve(v) for k, v in value.items()}
        return {k: v for k, v in items.items() if v is not _NO_VALUE}

    def _intrinsic(self, function: str, args: Any) -> Any:
        if function == "Ref":
            if args == "AWS::NoValue":
                return _NO_VALUE
            return self._ref(args)
        if function == "Fn::GetAtt":
            name = ".".join(args) if isinstance(args, list) else args
            if name not in self._attributes:
                raise Unresolvable(f"no attribute {name}")
            return self._attributes[name]
        if function == "Fn::If":
            condition, yes, no = args
            return self._resolve(yes if self.condition(condition) else no)
        if function == "Fn::Join":
            separator, parts = args
            return separator.join(str(p) for p in self._resolve(parts))
        if function == "Fn::Sub":
            text, variables = (args, {}) if isinstance(args, str) else args
            local = {k: self._resolve(v) for k, v in variables.items()}
            return _SUB.sub(lambda m: str(self._sub(m.group(1), local)), text)
        raise Unresolvable(f"intrinsic {function}")

    def _sub(self, name: str, local: Mapping[str, Any]) -> Any:
        if name in local:
            return local[name]
        if "." in name:
            return self._intrinsic("Fn::GetAtt", name)
        return self._ref(name)

    def _ref(self, name: str) -> Any:
        if name not in self._refs:
            raise Unresolvable(f"no value for Ref {name}")
        return self._refs[name]
