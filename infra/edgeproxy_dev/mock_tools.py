"""The tool call a mock makes when the request obliges one.

A real model must call a tool when ``tool_choice`` says so (OpenAI chat's
``"required"`` or a named function, the Responses API's same two, Anthropic's
``{"type": "any"}`` or ``{"type": "tool"}``), so the mocks do too: the named
tool, or the first one offered, with each string parameter set to the last
word the user wrote ("Weather in Paris?" gives ``{"city": "Paris"}``). A
conversation that already ends with the tool's result gets a text answer.
A ``tool_call`` fault still picks any call explicitly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def required_call(body: Mapping[str, Any], said: str, answered: bool) -> dict[str, Any] | None:
    """The call ``body``'s ``tool_choice`` demands, or None when it demands none."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping)]
    choice = body.get("tool_choice")
    if answered or not tools or not _obliges(choice):
        return None
    wanted = _named(choice)
    specs = [_spec(t) for t in tools]
    chosen = next((s for s in specs if s[0] == wanted), specs[0]) if wanted else specs[0]
    name, schema = chosen
    if not name:
        return None
    word = said.split()[-1].strip("?!.,;:") if said.split() else ""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    arguments = {
        key: word
        for key, prop in (properties or {}).items()
        if isinstance(prop, Mapping) and prop.get("type") == "string"
    }
    return {"name": name, "arguments": json.dumps(arguments)}


def _obliges(choice: Any) -> bool:
    if choice == "required":
        return True
    return isinstance(choice, Mapping) and choice.get("type") in ("function", "any", "tool")


def _named(choice: Any) -> str | None:
    if not isinstance(choice, Mapping):
        return None
    function = choice.get("function")
    if isinstance(function, Mapping):
        return str(function.get("name"))  # chat: {"type": "function", "function": {"name"}}
    name = choice.get("name")  # Responses {"type": "function", "name"}, Anthropic {"type": "tool"}
    return str(name) if name else None


def _spec(tool: Mapping[str, Any]) -> tuple[str, Any]:
    function = tool.get("function")
    if isinstance(function, Mapping):  # chat
        return str(function.get("name") or ""), function.get("parameters")
    schema = tool.get("parameters", tool.get("input_schema"))  # Responses, Anthropic
    return str(tool.get("name") or ""), schema
