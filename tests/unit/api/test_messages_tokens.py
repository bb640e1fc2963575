"""The documented token estimate of ``/v1/messages/count_tokens``."""

from __future__ import annotations

import pytest

from edgeproxy.api.surfaces.messages_tokens import IMAGE_TOKENS, check_count_request, estimate
from edgeproxy.errors import RequestError

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x" * 99}}


def test_text_is_characters_over_four_rounded_up() -> None:
    body = {"model": "m", "system": [{"type": "text", "text": "abc"}], "messages": []}
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "defgh"}]}]
    assert estimate(body) == 2  # 8 characters


def test_images_count_flat_wherever_they_are() -> None:
    result = {"type": "tool_result", "tool_use_id": "t", "content": [IMAGE]}
    body = {"messages": [{"role": "user", "content": [IMAGE, result]}]}
    assert estimate(body) == 2 * IMAGE_TOKENS


def test_never_less_than_one() -> None:
    assert estimate({"messages": [{"role": "user", "content": ""}]}) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [{"role": "user", "content": "x"}]},
        {"model": "m", "messages": []},
        {"model": "m", "messages": [{"role": "user", "content": 3}]},
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": "t"},
    ],
)
def test_bad_bodies_are_refused(body: dict[str, object]) -> None:
    with pytest.raises(RequestError):
        check_count_request(body)
