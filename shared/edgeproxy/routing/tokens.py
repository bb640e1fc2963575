"""The token estimate an attempt reserves against a deployment's ``tpm_limit``.

Exact TPM admission reserves this many tokens in the minute bucket before
the call (a conditional ADD) and reconciles it with the usage the upstream
reports afterwards. The estimate is deliberately simple and errs high:

    prompt  = ceil(characters of every text the request carries / 4)
              + 765 per image (a high-detail 512 px tile's cost)
    output  = max_completion_tokens | max_tokens | max_output_tokens, times n,
              or DEFAULT_OUTPUT_TOKENS when the request sets no limit;
              0 for embeddings

"Text" is every string under the request's input fields (messages, input,
prompt, instructions, system, tools), keys excluded, image data excluded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from edgeproxy.config.policies import Operation

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 765
DEFAULT_OUTPUT_TOKENS = 256
_INPUT_FIELDS = ("messages", "input", "prompt", "instructions", "system", "tools", "functions")
_OUTPUT_LIMITS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
_IMAGE_PARTS = frozenset({"image_url", "image", "input_image"})


def estimate_tokens(body: Mapping[str, Any], operation: Operation) -> int:
    """The tokens one request is expected to use (prompt plus output), at least 1."""
    chars, images = 0, 0
    for name in _INPUT_FIELDS:
        if name in body:
            more_chars, more_images = _walk(body[name])
            chars += more_chars
            images += more_images
    prompt = math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS
    if operation is Operation.EMBEDDINGS:
        return max(1, prompt)
    return max(1, prompt + _output(body))


def _output(body: Mapping[str, Any]) -> int:
    choices = body.get("n")
    n = choices if isinstance(choices, int) and not isinstance(choices, bool) and choices > 0 else 1
    for name in _OUTPUT_LIMITS:
        limit = body.get(name)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            return limit * n
    return DEFAULT_OUTPUT_TOKENS * n


def _walk(value: Any) -> tuple[int, int]:
    """(characters of text, images) under one JSON value; iterative, so depth is free."""
    chars, images = 0, 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, Mapping):
            if item.get("type") in _IMAGE_PARTS:
                images += 1
                continue
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return chars, images
