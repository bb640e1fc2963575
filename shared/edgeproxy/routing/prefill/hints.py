"""Prompt-size hints: how much of a prompt a deployment has not seen (``reference/001``).

After a request completes, its prompt size is remembered per (caller,
deployment) for ``hint_ttl_seconds`` (1,200 s). The next prompt of that
caller on that deployment is estimated as uncached only by what it adds:
a warmed continuation of a long conversation is not a cold large prefill.
Without a fresh hint the whole prompt counts as uncached. Pure: the hint
book is a value, updated by returning a new one; time is ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

HINT_TTL_SECONDS = 1200.0


@dataclass(frozen=True, slots=True)
class Hint:
    """The prompt size of a caller's last completed request on one deployment, and when."""

    prompt_tokens: int
    at: float


HintBook = Mapping[tuple[str, str], Hint]  # (caller, deployment id) -> hint


def remember(
    book: HintBook, caller: str, deployment_id: str, prompt_tokens: int, now: float
) -> dict[tuple[str, str], Hint]:
    """``book`` with the completed request's prompt size recorded."""
    return {**book, (caller, deployment_id): Hint(prompt_tokens, now)}


def fresh(hint: Hint | None, now: float, ttl: float = HINT_TTL_SECONDS) -> bool:
    """Whether ``hint`` still describes what the deployment has cached."""
    return hint is not None and 0 <= now - hint.at < ttl


def uncached(
    book: HintBook,
    caller: str,
    deployment_id: str,
    prompt_tokens: int,
    now: float,
    ttl: float = HINT_TTL_SECONDS,
) -> int:
    """The estimated uncached prompt tokens of a request on one deployment."""
    hint = book.get((caller, deployment_id))
    if hint is None or not fresh(hint, now, ttl):
        return prompt_tokens
    return max(0, prompt_tokens - hint.prompt_tokens)


def pruned(
    book: HintBook, now: float, ttl: float = HINT_TTL_SECONDS
) -> dict[tuple[str, str], Hint]:
    """``book`` without its expired hints."""
    return {key: hint for key, hint in book.items() if fresh(hint, now, ttl)}
