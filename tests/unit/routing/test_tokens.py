"""The token estimate reserved against tpm limits (``routing/estimates/tokens.py``)."""

from __future__ import annotations

import pytest

from edgeproxy.config.deployment import ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.routing.estimates.tokens import (
    DEFAULT_OUTPUT_TOKENS,
    IMAGE_TOKENS,
    OUTPUT_CEILING,
    Reservation,
    estimate_tokens,
    reservation,
    with_output_limit,
)

from .builders import dep


def test_text_counts_four_characters_a_token_plus_the_output_limit() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 401}], "max_tokens": 50}
    # "user" and the 401 characters: ceil(405 / 4) = 102; the model name is not prompt.
    assert estimate_tokens(body, Operation.CHAT) == 102 + 50


def test_the_newest_output_limit_wins_and_n_multiplies_it() -> None:
    body = {
        "messages": [{"role": "user", "content": "abcd"}],
        "max_completion_tokens": 10,
        "max_tokens": 999,
        "n": 3,
    }
    assert estimate_tokens(body, Operation.CHAT) == 2 + 30


def test_without_an_output_limit_the_default_is_reserved() -> None:
    body = {"messages": [{"role": "user", "content": "abcd"}]}
    assert estimate_tokens(body, Operation.CHAT) == 2 + DEFAULT_OUTPUT_TOKENS


def test_images_cost_a_fixed_amount_not_their_base64_length() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 400_000}}
    body = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "abcd"}, image]}],
        "max_tokens": 1,
    }
    # "user", "text", "abcd": 12 characters.
    assert estimate_tokens(body, Operation.CHAT) == 3 + IMAGE_TOKENS + 1


def test_tools_and_system_text_count() -> None:
    tools = [{"type": "function", "function": {"name": "f" * 40, "parameters": {}}}]
    bare = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    assert estimate_tokens({**bare, "tools": tools}, Operation.CHAT) > estimate_tokens(
        bare, Operation.CHAT
    )


def test_embeddings_reserve_no_output() -> None:
    assert estimate_tokens({"input": ["abcd", "efgh"]}, Operation.EMBEDDINGS) == 2


def test_nonsense_limits_fall_back_to_the_default_and_deep_nesting_is_fine() -> None:
    deep: object = "abcd"
    for _ in range(10_000):
        deep = [deep]
    body = {"messages": deep, "max_tokens": True, "n": -2}
    assert estimate_tokens(body, Operation.CHAT) == 1 + DEFAULT_OUTPUT_TOKENS


def _chat(**fields: object) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": "x" * 36}], **fields}  # 40 chars: 10


def test_a_request_without_an_output_limit_gets_half_the_minutes_remaining_budget() -> None:
    planned = reservation(_chat(), Operation.CHAT, 3000, 600)
    assert planned == Reservation(tokens=10 + 1195, output_limit=(3000 - 600 - 10) // 2)
    # n choices share it: the limit is per choice, the reservation covers all of them.
    planned = reservation(_chat(n=2), Operation.CHAT, 3000, 600)
    assert planned == Reservation(tokens=10 + 2 * 597, output_limit=597)


def test_the_gateway_set_limit_is_clamped_between_the_default_and_the_ceiling() -> None:
    assert reservation(_chat(), Operation.CHAT, 1_000_000, 0).output_limit == OUTPUT_CEILING
    nearly_spent = reservation(_chat(), Operation.CHAT, 3000, 2700)
    assert nearly_spent == Reservation(10 + DEFAULT_OUTPUT_TOKENS, DEFAULT_OUTPUT_TOKENS)
    # Over the limit it is reserved whole (admitted only into an empty minute), as before.
    assert reservation(_chat(), Operation.CHAT, 100, 0) == Reservation(100, DEFAULT_OUTPUT_TOKENS)


def test_a_request_with_its_own_limit_and_embeddings_keep_their_estimate() -> None:
    own = _chat(max_tokens=50)
    assert reservation(own, Operation.CHAT, 3000, 600) == Reservation(60)
    assert reservation({"input": "abcd"}, Operation.EMBEDDINGS, 3000, 0) == Reservation(1)
    assert reservation(_chat(), Operation.CHAT, None, 10**6) == Reservation(0)  # no tpm limit


@pytest.mark.parametrize(
    ("provider", "operation", "field"),
    [
        (ProviderKind.OPENAI, Operation.CHAT, "max_completion_tokens"),
        (ProviderKind.AZURE, Operation.CHAT, "max_completion_tokens"),
        (ProviderKind.OPENAI_COMPAT, Operation.CHAT, "max_tokens"),
        (ProviderKind.ANTHROPIC, Operation.CHAT, "max_tokens"),
        (ProviderKind.OPENAI, Operation.COMPLETIONS, "max_tokens"),
        (ProviderKind.OPENAI, Operation.RESPONSES, "max_output_tokens"),
    ],
)
def test_the_limit_goes_in_the_field_the_wire_operation_reads(
    provider: ProviderKind, operation: Operation, field: str
) -> None:
    extra = {"api_version": "2024-06-01"} if provider is ProviderKind.AZURE else {}
    deployment = dep("d", provider=provider, **extra)
    sent = with_output_limit(_chat(), operation, deployment, 77)
    assert sent == {**_chat(), field: 77}
    assert with_output_limit(_chat(), operation, deployment, None) == _chat()
    assert with_output_limit({"input": "x"}, Operation.EMBEDDINGS, deployment, 77) == {"input": "x"}
