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

A request without an output limit could answer with any number of tokens
while reserving only the default, so on a tpm-limited deployment it is sent
with one (``reservation``) and reserves exactly that: half of what the
minute bucket has left after its prompt, per choice,

    output = clamp((tpm_limit - used - prompt) // (2 * n), 256, 4096)

Half, so a concurrent request (or one read before this one's reservation
was reconciled) still finds room; at most ``OUTPUT_CEILING`` (a limit every
current chat model accepts: a larger one may be refused as too large); at
least the default, so whether it fits is decided as before. Tokens then stay
within the limit, up to what the prompt estimate misses: every attempt
reserves at least what it may answer, and admission keeps the reservations
within the limit.

A client key's reservation (``service/limits/reserve.py``) cannot take the
client's word for its prompt: it reserves ``key_estimate``, the prompt's
``prompt_bound`` (the estimate above plus what a chat format adds around
each message, ``MESSAGE_TOKENS``, and before the reply, ``PROMPT_TOKENS``;
a legacy completion's raw prompt has neither)
scaled by the serving pool's calibration (``routing.calibration``: how far
its upstreams' reported counts ran above this estimate), plus the output
the request may answer. ``max_tokens`` moves only the output part, which an
upstream that obeys it cannot exceed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.routing.estimates.calibration import MAX_RATIO, Calibration, scaled

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 765
DEFAULT_OUTPUT_TOKENS = 256
OUTPUT_CEILING = 4096  # the most the gateway itself asks an upstream for
MESSAGE_TOKENS = 4  # a message's role and delimiters, as chat formats count them
PROMPT_TOKENS = 3  # what a chat format puts before the reply
FLOOR = 0.5  # the least a calibration may scale a prompt estimate down to
UNCALIBRATED = Calibration()
_INPUT_FIELDS = ("messages", "input", "prompt", "instructions", "system", "tools", "functions")
_OUTPUT_LIMITS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
_IMAGE_PARTS = frozenset({"image_url", "image", "input_image"})


# The field a wire body's output limit goes in: OpenAI's current name for its
# own chat API (its reasoning models refuse max_tokens), the classic one for
# compatible servers and for the adapters (anthropic, bedrock read both).
_CURRENT_NAME = frozenset({ProviderKind.OPENAI, ProviderKind.AZURE})


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one attempt reserves against a ``tpm_limit``, and the output limit it is sent with.

    ``output_limit``: per choice, set by the gateway (None: the request's own stands).
    """

    tokens: int
    output_limit: int | None = None


def estimate_tokens(body: Mapping[str, Any], operation: Operation) -> int:
    """The tokens one request is expected to use (prompt plus output), at least 1."""
    prompt = _prompt(body)
    if operation is Operation.EMBEDDINGS:
        return max(1, prompt)
    limit = _limit(body)
    return max(1, prompt + (DEFAULT_OUTPUT_TOKENS if limit is None else limit) * _choices(body))


def prompt_bound(body: Mapping[str, Any]) -> int:
    """A conservative estimate of the prompt: its text and images, each message's frame, and
    the reply's (a chat's: a legacy completion's raw ``prompt`` is sent with no frame).

    >>> prompt_bound({"messages": [{"role": "user", "content": "Hello!"}]})
    10
    >>> prompt_bound({"prompt": "The sea is"})
    3
    """
    messages = _messages(body)
    reply = 0 if messages == 0 and "prompt" in body else PROMPT_TOKENS
    return _prompt(body) + MESSAGE_TOKENS * messages + reply


def key_estimate(body: Mapping[str, Any], operation: Operation, ratio: float = 1.0) -> int:
    """What a client key reserves for one request: the calibrated prompt, plus its output.

    ``ratio``: the pool's calibration (1: none yet). The output part is the
    request's output limit (``DEFAULT_OUTPUT_TOKENS`` without one) times ``n``.

    >>> key_estimate({"messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 1},
    ...              Operation.CHAT, ratio=1.5)
    16
    """
    prompt = scaled(prompt_bound(body), ratio)
    if operation is Operation.EMBEDDINGS:
        return max(1, prompt)
    limit = _limit(body)
    return max(1, prompt + (DEFAULT_OUTPUT_TOKENS if limit is None else limit) * _choices(body))


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """The prompt's estimated tokens (its text at ``CHARS_PER_TOKEN``, images at a flat size)."""
    return _prompt(body)


def prompt_estimate(body: Mapping[str, Any]) -> int:
    """The prompt's tokens by the estimate (text at ``CHARS_PER_TOKEN``, images at ``IMAGE_TOKENS``)."""
    return _prompt(body)


def requested_output(body: Mapping[str, Any]) -> int | None:
    """The output tokens the request asks for in all (its limit times its choices), if it set one."""
    limit = _limit(body)
    return None if limit is None else limit * _choices(body)


def calibrated_prompt(body: Mapping[str, Any], calibration: Calibration) -> int:
    """The prompt's tokens as a deployment with ``calibration`` would count them.

    Uncalibrated, the text alone (``prompt_estimate``); calibrated, ``prompt_bound``
    (each message's frame included) times the ratio, so a chat template's tokens are
    counted and a raw completion prompt the tokenizer counts smaller is not inflated.
    A ratio below 1 counts down to ``FLOOR`` only.

    >>> body = {"messages": [{"content": "x" * 400}]}
    >>> calibrated_prompt(body, UNCALIBRATED), calibrated_prompt(body, Calibration(1.5, 3))
    (100, 161)
    """
    if calibration.samples == 0:
        return prompt_estimate(body)
    ratio = min(MAX_RATIO, max(FLOOR, calibration.ratio))
    # The ratio is kept to 6 decimals: a product that close to a whole count is that count.
    return math.ceil(round(prompt_bound(body) * ratio, 4))


def unreported_usage(
    body: Mapping[str, Any], text: str, calibration: Calibration = UNCALIBRATED
) -> tuple[int, int]:
    """(prompt, completion) tokens counted for a stream whose upstream reported no usage
    (an ``openai_compat`` server asked for none, or one that ignores the ask): the prompt
    as the serving deployment counts it (``calibrated_prompt``, by its ``calibration``
    for the request's protocol), and the streamed text at ``CHARS_PER_TOKEN``."""
    return calibrated_prompt(body, calibration), math.ceil(len(text) / CHARS_PER_TOKEN)


def reservation(
    body: Mapping[str, Any], operation: Operation, tpm_limit: int | None, used: int
) -> Reservation:
    """The reservation of an attempt on a deployment with ``tpm_limit`` (``used`` this minute).

    Without a tpm limit nothing is reserved and the request goes as it is.

    >>> reservation({"messages": [{"content": "x" * 40}]}, Operation.CHAT, 3000, 600)
    Reservation(tokens=1205, output_limit=1195)
    """
    if tpm_limit is None:
        return Reservation(0)
    if operation is Operation.EMBEDDINGS or _limit(body) is not None:
        return Reservation(min(estimate_tokens(body, operation), tpm_limit))
    prompt, n = _prompt(body), _choices(body)
    share = (tpm_limit - used - prompt) // (2 * n)
    output = min(OUTPUT_CEILING, max(DEFAULT_OUTPUT_TOKENS, share))
    return Reservation(min(prompt + output * n, tpm_limit), output)


def with_output_limit(
    body: Mapping[str, Any], operation: Operation, deployment: Deployment, limit: int | None
) -> Mapping[str, Any]:
    """``body`` as sent for ``operation`` on ``deployment``, carrying ``limit`` if one is set."""
    if limit is None or operation is Operation.EMBEDDINGS:
        return body
    if operation is Operation.RESPONSES:
        name = "max_output_tokens"
    elif operation is Operation.CHAT and deployment.provider in _CURRENT_NAME:
        name = "max_completion_tokens"
    else:
        name = "max_tokens"
    return {**body, name: limit}


def _prompt(body: Mapping[str, Any]) -> int:
    chars, images = 0, 0
    for name in _INPUT_FIELDS:
        if name in body:
            more_chars, more_images = _walk(body[name])
            chars += more_chars
            images += more_images
    return math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS


def _messages(body: Mapping[str, Any]) -> int:
    count = 0
    for name in ("messages", "input"):
        value = body.get(name)
        if isinstance(value, list):
            count += len(value)
    return count


def _choices(body: Mapping[str, Any]) -> int:
    choices = body.get("n")
    return (
        choices if isinstance(choices, int) and not isinstance(choices, bool) and choices > 0 else 1
    )


def _limit(body: Mapping[str, Any]) -> int | None:
    for name in _OUTPUT_LIMITS:
        limit = body.get(name)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            return limit
    return None


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
