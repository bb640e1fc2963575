"""The primary spec's (000) field names of ``PUT /admin/router-settings``, read as edgeproxy's.

000 sends its router settings flat and in camelCase (``routingStrategy``,
``allowedFails``, ``cooldownSeconds``, ...); edgeproxy keeps the circuit
knobs under ``circuit`` in snake_case. A body may use either spelling, or
both for different fields; naming one field twice is a 400.

    routingStrategy               -> strategy
    allowedFails ... throttleCooldownSeconds -> circuit.<snake_case>
    executionPolicies             -> execution_policies (responseMs, idleMs,
                                     totalMs, maxAttempts -> their snake_case)

``GET ?names=000`` answers in 000's names (``to_spec_names``): every setting
000 defines flat under its camelCase name, edgeproxy's own settings under
their own names, so that the answer can be sent back as a ``PUT`` body.
"""

from __future__ import annotations

import re
from typing import Any

from edgeproxy.errors import RequestError

_CIRCUIT = (
    "allowedFails",
    "cooldownSeconds",
    "retryAfterSeconds",
    "failureWindowSeconds",
    "maxCooldownSeconds",
    "halfOpenProbeSeconds",
    "configurationCooldownSeconds",
    "throttleCooldownSeconds",
)
_DEADLINE = ("responseMs", "idleMs", "totalMs", "maxAttempts")


def snake(name: str) -> str:
    """``allowedFails`` -> ``allowed_fails``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def from_spec_names(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with 000's names moved to edgeproxy's; raises ``RequestError`` (400)
    for a field named both ways."""
    out = dict(body)
    if "routingStrategy" in out:
        _put(out, "strategy", out.pop("routingStrategy"), "routingStrategy")
    circuit = out.get("circuit")
    moved = {snake(n): out.pop(n) for n in _CIRCUIT if n in out}
    if moved:
        if circuit is not None and not isinstance(circuit, dict):
            raise RequestError("circuit: must be an object", param="circuit")
        merged = dict(circuit or {})
        for name, value in moved.items():
            _put(merged, name, value, _camel(name))
        out["circuit"] = merged
    if "executionPolicies" in out:
        _put(
            out, "execution_policies", _policies(out.pop("executionPolicies")), "executionPolicies"
        )
    return out


def to_spec_names(settings: dict[str, Any]) -> dict[str, Any]:
    """Effective router settings (edgeproxy's names) as 000 names them.

    >>> to_spec_names({"strategy": "least-busy", "circuit": {"allowed_fails": 3, "x_y": 1}})
    {'circuit': {'x_y': 1}, 'routingStrategy': 'least-busy', 'allowedFails': 3}
    """
    out = dict(settings)
    if "strategy" in out:
        out["routingStrategy"] = out.pop("strategy")
    circuit = out.get("circuit")
    if isinstance(circuit, dict):
        own = dict(circuit)
        spec = {n: own.pop(snake(n)) for n in _CIRCUIT if snake(n) in own}
        out["circuit"] = own
        out.update(spec)
    if "execution_policies" in out:
        out["executionPolicies"] = _camel_policies(out.pop("execution_policies"))
    return out


def _camel_policies(matrix: Any) -> Any:
    if not isinstance(matrix, dict):
        return matrix
    return {
        operation: {
            mode: {_camel(k): v for k, v in deadline.items()}
            if isinstance(deadline, dict)
            else deadline
            for mode, deadline in modes.items()
        }
        if isinstance(modes, dict)
        else modes
        for operation, modes in matrix.items()
    }


def _policies(matrix: Any) -> Any:
    if not isinstance(matrix, dict):
        return matrix  # the model's validation names the problem
    return {
        operation: {mode: _deadline(d) for mode, d in modes.items()}
        if isinstance(modes, dict)
        else modes
        for operation, modes in matrix.items()
    }


def _deadline(deadline: Any) -> Any:
    if not isinstance(deadline, dict):
        return deadline
    out = dict(deadline)
    for name in _DEADLINE:
        if name in out:
            _put(out, snake(name), out.pop(name), name)
    return out


def _put(target: dict[str, Any], name: str, value: Any, spec_name: str) -> None:
    if name in target:
        raise RequestError(f"{spec_name}: names the same setting as {name}; send one", param=name)
    target[name] = value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
