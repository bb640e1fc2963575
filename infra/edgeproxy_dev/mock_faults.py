"""What a mock upstream should do wrong, for one request.

A fault is a JSON object; every key is optional and unknown keys are
rejected (a typo in a test must not silently mean "no fault"):

    {"status": 429, "retry_after": "2"}               throttle with Retry-After
    {"status": 400, "error": {"code": "context_length_exceeded"}}
    {"status": 401}                                    invalid_api_key (message holds a fake key)
    {"reset": true}                                    TCP reset before response headers
    {"stall": true}                                    never answer
    {"latency_ms": 300}                                delay response headers
    {"first_token_delay_ms": 500, "keepalive_ms": 100} slow first token, with SSE comments (not bedrock)
    {"cut_after_chunks": 2}                            close the connection after 2 SSE events
    {"stall_after_chunks": 2}                          go silent after 2 SSE events
    {"malformed_after_chunks": 1}                      an unparseable event after 1 (JSON: bad body)
    {"no_done": true}                                  omit [DONE] / message_stop
    {"ignore_stream_options": true}                    no usage chunk even when asked (a server
                                                       that ignores stream_options)
    {"finish_reason": null}                            no finish reason anywhere
    {"content": ""}                                    an empty answer
    {"obey_max_tokens": true}                          cut the answer at the request's
                                                       max_completion_tokens / max_tokens
                                                       (one token a word; finish_reason length)
    {"reject_prefill": true}                           400 for a request ending in an assistant turn
    {"tool_call": {"name": "f", "arguments": "{}"}}    answer with a call of tool f (JSON and SSE,
                                                       every protocol; bedrock also takes an object)
    {"cache_read_tokens": 900, "cache_write_tokens": 300}
                                                       report prompt-cache reads and writes
                                                       beside the prompt, the provider's way
                                                       (Anthropic: apart from input_tokens;
                                                       OpenAI: reads inside prompt_tokens as
                                                       cached_tokens, no writes field)
    {"error_after_chunks": 2, "error": {...}}          an error event after 2 stream events, then end
                                                       (bedrock: an exception frame; error.code names it)

A request whose last message is the assistant's (a prefill) is answered with
the rest of the canonical answer when that answer starts with the prefill,
as a model continuing its own text would.

Hostile answers (huge, endless, NaN, echoing the request's headers): ``mock_hostile``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgeproxy.anthropic_errors import type_of


@dataclass(frozen=True, slots=True)
class MockFault:
    """One request's behaviour; the default is a healthy answer."""

    status: int = 200
    error: Mapping[str, Any] | None = None  # merged over the default error object
    body: Any = None  # answer exactly this JSON instead of the generated one
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: str | None = None
    retry_after_ms: int | None = None
    latency_ms: int = 0
    reset: bool = False
    stall: bool = False
    first_token_delay_ms: int = 0
    chunk_delay_ms: int = 0
    cut_after_chunks: int | None = None
    stall_after_chunks: int | None = None
    malformed_after_chunks: int | None = None
    keepalive_ms: int | None = None
    no_done: bool = False
    ignore_stream_options: bool = False
    content: str | None = None
    obey_max_tokens: bool = False
    finish_reason: str | None = "stop"
    reject_prefill: bool = False
    error_after_chunks: int | None = None
    tool_call: Mapping[str, Any] | None = None
    huge_json_bytes: int | None = None
    endless_json: bool = False
    long_line_bytes: int | None = None
    data_lines_bytes: int | None = None
    endless_stream: bool = False
    trickle: bool = False
    nan: bool = False
    echo_headers: bool = False
    # Apply this fault only to requests whose last user text is longer than this many
    # characters (a server over its context window); shorter ones get a healthy answer.
    over_chars: int | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @classmethod
    def parse(cls, value: MockFault | Mapping[str, Any]) -> MockFault:
        """A fault from its JSON form; raises ValueError on unknown keys."""
        if isinstance(value, MockFault):
            return value
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError("unknown mock fault keys: " + ", ".join(unknown))
        return cls(**value)

    def to_json(self) -> dict[str, Any]:
        """The JSON form (for the control API)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v != _DEFAULTS[k]}


_DEFAULTS = {f.name: getattr(MockFault(), f.name) for f in dataclasses.fields(MockFault)}


def openai_error(status: int, override: Mapping[str, Any] | None) -> dict[str, Any]:
    """An OpenAI error body, with a realistic default for common statuses."""
    message, type_, code = {
        400: ("Invalid request.", "invalid_request_error", None),
        401: (
            "Incorrect API key provided: sk-mock-abcdef1234567890. You can find your API key "
            "in your account settings.",
            "invalid_request_error",
            "invalid_api_key",
        ),
        403: ("You are not allowed to use this model.", "invalid_request_error", None),
        404: ("The model does not exist.", "invalid_request_error", "model_not_found"),
        429: ("Rate limit reached. Please try again later.", "requests", "rate_limit_exceeded"),
        500: ("The server had an error while processing your request.", "server_error", None),
        503: ("The engine is currently overloaded.", "server_error", None),
    }.get(status, (f"mock upstream error {status}", "api_error", None))
    error: dict[str, Any] = {"message": message, "type": type_, "param": None, "code": code}
    error.update(override or {})
    return {"error": error}


def anthropic_error(status: int, override: Mapping[str, Any] | None) -> dict[str, Any]:
    """An Anthropic error body; ``override`` may set ``message`` and ``type``."""
    error = {
        "type": type_of(status) or "api_error",
        "message": openai_error(status, None)["error"]["message"],
    }
    for key in ("type", "message"):
        if override and isinstance(override.get(key), str):
            error[key] = override[key]
    return {"type": "error", "error": error}
