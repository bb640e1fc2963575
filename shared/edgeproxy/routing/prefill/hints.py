"""Prompt-size hints: how much of a prompt a deployment has not seen (``reference/001``).

After a request completes, its prompt size is remembered per (caller,
deployment) for ``hint_ttl_seconds`` (1,200 s by default). The next prompt
of that caller on that deployment is estimated as uncached only by what it
adds: a warmed continuation of a long conversation is not a cold large
prefill. Without a fresh hint the whole prompt counts as uncached. Pure:
hints are values; time is ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Hint:
    """The prompt size of a caller's last completed request on one deployment, and when."""

    prompt_tokens: int
    at: float


def fresh(hint: Hint | None, now: float, ttl: float) -> bool:
    """Whether ``hint`` still describes what the deployment has cached."""
    return hint is not None and 0 <= now - hint.at < ttl


def uncached(
    hints: Mapping[str, Hint], deployment_id: str, prompt_tokens: int, now: float, ttl: float
) -> int:
    """The estimated uncached prompt tokens of a request on one deployment.

    ``hints``: the caller's hints by deployment id.
    """
    hint = hints.get(deployment_id)
    if hint is None or not fresh(hint, now, ttl):
        return prompt_tokens
    return max(0, prompt_tokens - hint.prompt_tokens)
