"""Responses API request bodies: checked shallowly, and translated to chat where they map.

    instructions                          -> a leading ``system`` message
    input (a string)                      -> one ``user`` message
    message items                         -> chat messages (``developer`` as ``system``):
      input_text / output_text / refusal  -> text
      input_image with an ``image_url``   -> an ``image_url`` part (user messages)
    function_call items                   -> the assistant's ``tool_calls`` (consecutive ones merged)
    function_call_output items            -> ``tool`` messages
    max_output_tokens                     -> ``max_completion_tokens``
    temperature, top_p, user              -> the same names
    tools (``type: function``)            -> chat function tools
    tool_choice, parallel_tool_calls      -> the same, in chat's shape (only with tools)
    text.format json_schema / json_object -> ``response_format``

Ignored, having no effect on the answer: ``metadata``, ``safety_identifier``,
``prompt_cache_key``, ``service_tier``, ``stream_options``, and the neutral
values ``store: false``, ``background: false``, ``include: []``,
``truncation: disabled`` (or ``null`` for any field).

Everything else has no chat equivalent and needs a deployment that serves the
Responses API natively (``operations: [responses]``): ``previous_response_id``,
``conversation``, ``prompt``, ``store: true``, ``background: true``,
``reasoning``, ``include``, built-in tools (web_search, file_search, ...),
other ``tool_choice`` forms, input items other than messages and function
calls (reasoning, item_reference, ...), files and images by ``file_id``,
``text.verbosity``, ``truncation: auto``, ``max_tool_calls``, ``top_logprobs``
and any field not named here. Such a request is still routed, to native
deployments only (``Translated.body`` is None); a malformed one is a 400 here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edgeproxy.api.codec import Parsed
from edgeproxy.api.parsing import require_model, stream_flag
from edgeproxy.api.surfaces.responses_options import NATIVE, invalid, text_format, tools
from edgeproxy.service.request import Translated

_MAPPED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "max_output_tokens",
        "temperature",
        "top_p",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "text",
        "user",
    }
)
_IGNORED = frozenset(
    {"metadata", "safety_identifier", "prompt_cache_key", "service_tier", "stream_options"}
)
_NEUTRAL: dict[str, tuple[Any, ...]] = {
    "store": (False,),
    "background": (False,),
    "include": ([],),
    "truncation": ("disabled",),
}
_STORED = "needs state kept by the provider: only deployments serving the Responses API natively"
_REASONS = {
    "previous_response_id": _STORED,
    "conversation": _STORED,
    "store": "a translated response is not stored; send store: false, or use a native deployment",
    "background": "background responses are kept by the provider: only native deployments",
}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def to_chat_request(body: Mapping[str, Any]) -> Parsed:
    """Validate a Responses body; its chat translation, or why there is none.

    >>> parsed = to_chat_request({"model": "m", "input": "hi", "instructions": "Be brief."})
    >>> parsed.chat.body["messages"]
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]
    >>> to_chat_request({"model": "m", "input": "hi", "previous_response_id": "r"}).chat.param
    'previous_response_id'
    """
    model = require_model(dict(body))
    stream = stream_flag(dict(body))
    translation = _Translation()
    chat = translation.run(body, model, stream)
    refused = translation.refused
    translated = Translated(None, *refused) if refused else Translated(chat)
    return Parsed(model, dict(body), stream, frozenset(translation.modalities), translated)


class _Translation:
    """One body's walk: the chat body, the modalities seen, the first thing that does not map."""

    def __init__(self) -> None:
        self.refused: tuple[str, str] | None = None
        self.modalities = {"text"}
        self.messages: list[dict[str, Any]] = []

    def refuse(self, param: str, reason: str = NATIVE) -> None:
        if self.refused is None:
            self.refused = (param, reason)

    def run(self, body: Mapping[str, Any], model: str, stream: bool) -> dict[str, Any]:
        for name, value in body.items():
            if name in _MAPPED or name in _IGNORED or value is None:
                continue
            if value not in _NEUTRAL.get(name, ()):
                self.refuse(name, _REASONS.get(name, NATIVE))
        instructions = body.get("instructions")
        if instructions is not None:
            if not isinstance(instructions, str):
                raise invalid("instructions", "must be a string")
            if instructions:
                self.messages.append({"role": "system", "content": instructions})
        self._input(body.get("input"))
        out: dict[str, Any] = {"model": model, "messages": self.messages}
        if body.get("max_output_tokens") is not None:
            tokens = body["max_output_tokens"]
            if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
                raise invalid("max_output_tokens", "must be an integer >= 1")
            out["max_completion_tokens"] = tokens
        for name in ("temperature", "top_p"):
            value = body.get(name)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise invalid(name, "must be a number")
                out[name] = value
        if body.get("user") is not None:
            if not isinstance(body["user"], str):
                raise invalid("user", "must be a string")
            out["user"] = body["user"]
        out.update(tools(body, self.refuse))
        out.update(text_format(body.get("text"), self.refuse))
        if stream:
            out["stream"] = True  # the gateway asks for usage where the deployment allows it
        return out

    def _input(self, raw: Any) -> None:
        if isinstance(raw, str):
            self.messages.append({"role": "user", "content": raw})
            return
        if raw is None:
            if self.refused is None:  # previous_response_id or a prompt may stand in for it
                raise invalid("input", "field required (a string or an array of input items)")
            return
        if not isinstance(raw, list):
            raise invalid("input", "must be a string or an array of input items")
        for index, item in enumerate(raw):
            at = f"input[{index}]"
            if not isinstance(item, dict):
                raise invalid(at, "must be an object")
            kind = item.get("type", "message" if "role" in item else None)
            if kind == "message":
                self._message(item, at)
            elif kind == "function_call":
                self._call(item, at)
            elif kind == "function_call_output":
                self._output(item, at)
            else:
                self.refuse(f"{at}.type", f"input items of type '{kind}' {NATIVE}")

    def _message(self, item: Mapping[str, Any], at: str) -> None:
        role = item.get("role")
        if role not in ("user", "assistant", "system", "developer"):
            raise invalid(f"{at}.role", "must be 'user', 'assistant', 'system' or 'developer'")
        content = item.get("content")
        if isinstance(content, str):
            self.messages.append(
                {"role": "system" if role == "developer" else role, "content": content}
            )
            return
        if not isinstance(content, list):
            raise invalid(f"{at}.content", "must be a string or an array of content parts")
        parts = [self._part(part, f"{at}.content[{i}]", role) for i, part in enumerate(content)]
        kept = [p for p in parts if p is not None]
        if role == "user":
            self.messages.append({"role": "user", "content": kept})
            return
        text = "".join(str(p.get("text", "")) for p in kept)
        if role == "assistant":
            self.messages.append({"role": "assistant", "content": text})
        else:
            self.messages.append({"role": "system", "content": text})

    def _part(self, part: Any, at: str, role: str) -> dict[str, Any] | None:
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise invalid(at, "must be a content part object with a 'type'")
        kind = part["type"]
        if kind in _TEXT_PARTS or kind == "refusal":
            text = part.get("refusal" if kind == "refusal" else "text")
            if not isinstance(text, str):
                raise invalid(f"{at}.text", "must be a string")
            return {"type": "text", "text": text}
        if kind == "input_image":
            self.modalities.add("image")
            url = part.get("image_url")
            if not isinstance(url, str):
                self.refuse(f"{at}.file_id", f"images by file id {NATIVE}")
                return None
            if role != "user":
                raise invalid(at, "images belong in user messages")
            image: dict[str, Any] = {"url": url}
            if isinstance(part.get("detail"), str):
                image["detail"] = part["detail"]
            return {"type": "image_url", "image_url": image}
        self.refuse(f"{at}.type", f"content parts of type '{kind}' {NATIVE}")
        return None

    def _call(self, item: Mapping[str, Any], at: str) -> None:
        call_id, name = item.get("call_id"), item.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise invalid(at, "a function_call item needs 'call_id' and 'name'")
        arguments = item.get("arguments", "{}")
        if not isinstance(arguments, str):
            raise invalid(f"{at}.arguments", "must be a string (JSON)")
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call)
            if last.get("content") == "":
                last["content"] = None
            return
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})

    def _output(self, item: Mapping[str, Any], at: str) -> None:
        call_id, output = item.get("call_id"), item.get("output")
        if not isinstance(call_id, str):
            raise invalid(f"{at}.call_id", "must be a string")
        if isinstance(output, list):
            parts = [self._part(p, f"{at}.output[{i}]", "tool") for i, p in enumerate(output)]
            output = "".join(str(p.get("text", "")) for p in parts if p is not None)
        if not isinstance(output, str):
            raise invalid(f"{at}.output", "must be a string or an array of content parts")
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
