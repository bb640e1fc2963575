"""The token estimate reserved against tpm limits (``routing/tokens.py``)."""

from __future__ import annotations

from edgeproxy.config.policies import Operation
from edgeproxy.routing.tokens import DEFAULT_OUTPUT_TOKENS, IMAGE_TOKENS, estimate_tokens


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
