"""The Responses API's tool and output-format options, in chat's shape.

    tools (type function)                 -> chat function tools
    tool_choice auto | none | required    -> the same
    tool_choice {type: function, name}    -> {type: function, function: {name}}
    parallel_tool_calls                   -> the same (only with tools, as chat wants)
    text.format json_object / json_schema -> response_format

Built-in tools, other ``tool_choice`` forms and ``text.verbosity`` have no chat
equivalent: they are handed to ``refuse`` (the request then needs a native
deployment).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from edgeproxy.errors import RequestError

NATIVE = "has no chat-completions equivalent: only deployments serving the Responses API natively"
Refuse = Callable[..., None]  # refuse(param, reason=NATIVE)


def invalid(param: str, problem: str) -> RequestError:
    """The 400 for a malformed field."""
    return RequestError(f"{param}: {problem}", param=param)


def tools(body: Mapping[str, Any], refuse: Refuse) -> dict[str, Any]:
    """``tools``, ``tool_choice`` and ``parallel_tool_calls`` as chat fields (none without tools)."""
    given = body.get("tools")
    if not given:
        return {}
    if not isinstance(given, list):
        raise invalid("tools", "must be an array")
    out: list[dict[str, Any]] = []
    for index, tool in enumerate(given):
        at = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise invalid(at, "must be an object")
        if tool.get("type") != "function":
            refuse(f"{at}.type", f"built-in tools ('{tool.get('type')}') {NATIVE}")
            continue
        if not isinstance(tool.get("name"), str):
            raise invalid(f"{at}.name", "field required (a string)")
        function: dict[str, Any] = {"name": tool["name"]}
        function["parameters"] = tool.get("parameters") or {"type": "object", "properties": {}}
        for key in ("description", "strict"):
            if tool.get(key) is not None:
                function[key] = tool[key]
        out.append({"type": "function", "function": function})
    chosen: dict[str, Any] = {"tools": out}
    choice = body.get("tool_choice")
    if isinstance(choice, str) and choice in ("auto", "none", "required"):
        chosen["tool_choice"] = choice
    elif isinstance(choice, dict) and choice.get("type") == "function":
        if not isinstance(choice.get("name"), str):
            raise invalid("tool_choice.name", "field required (a string)")
        chosen["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    elif choice is not None:
        refuse("tool_choice", f"this tool_choice {NATIVE}")
    if isinstance(body.get("parallel_tool_calls"), bool):
        chosen["parallel_tool_calls"] = body["parallel_tool_calls"]
    return chosen


def text_format(text: Any, refuse: Refuse) -> dict[str, Any]:
    """``text.format`` as chat's ``response_format`` (nothing for plain text)."""
    if text is None:
        return {}
    if not isinstance(text, dict):
        raise invalid("text", "must be an object")
    if text.get("verbosity") is not None:
        refuse("text.verbosity")
    form = text.get("format")
    if form is None:
        return {}
    kind = form.get("type") if isinstance(form, dict) else None
    if kind == "text":
        return {}
    if kind == "json_object":
        return {"response_format": {"type": "json_object"}}
    if kind == "json_schema":
        assert isinstance(form, dict)
        if not isinstance(form.get("name"), str) or not isinstance(form.get("schema"), dict):
            raise invalid("text.format", "a json_schema format needs 'name' and 'schema'")
        schema = {k: form[k] for k in ("name", "schema", "strict", "description") if k in form}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}
    raise invalid("text.format.type", "must be 'text', 'json_object' or 'json_schema'")
