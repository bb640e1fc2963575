"""Request-body validation for the OpenAI-compatible endpoints.

Validation is deliberately shallow: the gateway checks what it needs to route
(``model``, the shape of ``messages`` / ``input``, ``stream``) and forwards
everything else unchanged, so new provider fields keep working.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request

from edgeproxy import strict_json
from edgeproxy.errors import BodyTooLarge, RequestError, RequestTimeout

BODY_READ_TIMEOUT_S = 10.0  # a slow body holds its key's request slot for at most this


async def read_json_object(
    request: Request, max_bytes: int, timeout_s: float = BODY_READ_TIMEOUT_S
) -> dict[str, Any]:
    """Read the body (at most ``max_bytes``, within ``timeout_s``) and parse it as a JSON object.

    The JSON must be re-encodable (``strict_json``): no NaN / Infinity, no
    number overflowing a double, no lone surrogate, at most
    ``strict_json.MAX_DEPTH`` levels of nesting; anything else is a 400, so a
    hostile body can never fail later, when it is encoded for the upstream.
    A client that sends its body slower than ``timeout_s`` gets a 408.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLarge(f"Request body is larger than the limit of {max_bytes} bytes.")
    try:
        async with asyncio.timeout(timeout_s):
            raw = await _read(request, max_bytes)
    except TimeoutError:
        raise RequestTimeout(
            f"The request body did not arrive within {timeout_s:g} seconds."
        ) from None
    if not raw.strip():
        raise RequestError("The request body is empty; expected a JSON object.")
    try:
        data = strict_json.loads(raw)
    except ValueError as exc:
        raise RequestError(
            f"We could not parse the JSON body of your request ({exc}). "
            "The body must be valid JSON."
        ) from None
    if not isinstance(data, dict):
        raise RequestError("The request body must be a JSON object.")
    return data


async def _read(request: Request, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLarge(f"Request body is larger than the limit of {max_bytes} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


MAX_MODEL_CHARS = 256  # longer names no pool: refused before any lookup or log record


def model_problem(model: Any) -> str | None:
    """Why ``model`` is not a model name a request may ask for (None: it is one).

    A name is what lookups, the request log's keys and error messages carry,
    so it is bounded and printable (no NUL, newline or other control
    character); the message never repeats it.
    """
    if not isinstance(model, str) or not model.strip():
        return "'model' must be a non-empty string"
    if len(model) > MAX_MODEL_CHARS:
        return f"'model' must be at most {MAX_MODEL_CHARS} characters"
    if not model.isprintable():
        return "'model' must not hold control characters"
    return None


def require_model(body: dict[str, Any]) -> str:
    """The body's ``model``; a 400 (``param: model``) if it is missing or not a model name."""
    model = body.get("model")
    if model is None:
        raise RequestError("you must provide a model parameter", param="model")
    problem = model_problem(model)
    if problem is not None:
        raise RequestError(problem, param="model")
    return str(model)


def stream_flag(body: dict[str, Any]) -> bool:
    stream = body.get("stream", False)
    if stream is None:
        return False
    if not isinstance(stream, bool):
        raise RequestError("'stream' must be a boolean", param="stream")
    return stream


def chat_modalities(body: dict[str, Any]) -> frozenset[str]:
    """Validate ``messages`` and return the input modalities they use."""
    messages = body.get("messages")
    if messages is None:
        raise RequestError("Missing required parameter: 'messages'.", param="messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty array", param="messages")
    modalities = {"text"}
    for index, message in enumerate(messages):
        param = f"messages[{index}]"
        if not isinstance(message, dict):
            raise RequestError(f"'{param}' must be an object", param=param)
        if not isinstance(message.get("role"), str):
            raise RequestError(f"'{param}.role' must be a string", param=f"{param}.role")
        content = message.get("content")
        if isinstance(content, list):
            for at, part in enumerate(content):
                if not isinstance(part, dict):
                    # Every translation reads parts as objects; so does every OpenAI server.
                    where = f"{param}.content[{at}]"
                    raise RequestError(f"'{where}' must be an object", param=where)
                kind = part.get("type")
                if kind == "image_url":
                    modalities.add("image")
                elif kind == "input_audio":
                    modalities.add("audio")
        elif content is not None and not isinstance(content, str):
            raise RequestError(
                f"'{param}.content' must be a string, an array of parts, or null",
                param=f"{param}.content",
            )
    return frozenset(modalities)


def tools_shape(body: dict[str, Any]) -> None:
    """``tools``, when given, is an array of objects (as OpenAI requires).

    A server handed anything else may reset the connection rather than answer 400, and
    that reset would read as the deployment's failure, not the request's.
    """
    tools = body.get("tools")
    if tools is None:
        return
    if not isinstance(tools, list):
        raise RequestError("'tools' must be an array of tool objects", param="tools")
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise RequestError(f"'tools[{index}]' must be an object", param=f"tools[{index}]")


def embeddings_input(body: dict[str, Any]) -> None:
    value = body.get("input")
    if value is None:
        raise RequestError("Missing required parameter: 'input'.", param="input")
    if isinstance(value, str):
        return
    if isinstance(value, list) and value and all(isinstance(v, (str, int, list)) for v in value):
        return
    raise RequestError("'input' must be a string or a non-empty array", param="input")


def completions_prompt(body: dict[str, Any]) -> None:
    """Validate a legacy completion's ``prompt``: a string, strings, or token arrays."""
    value = body.get("prompt")
    if value is None:
        raise RequestError("Missing required parameter: 'prompt'.", param="prompt")
    if isinstance(value, str):
        return
    if isinstance(value, list) and value:
        if all(isinstance(v, str) for v in value) or _tokens(value):
            return
        if all(isinstance(v, list) and v and _tokens(v) for v in value):
            return
    raise RequestError(
        "'prompt' must be a string, an array of strings, or an array of token arrays",
        param="prompt",
    )


def _tokens(values: list[Any]) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)
