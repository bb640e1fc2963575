"""Fixtures of the resilience tests (the shared ones come from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import openai
import pytest

from tests.integration.resilience.helpers import client


@pytest.fixture
def sdk() -> Iterator[Callable[[str], openai.OpenAI]]:
    """Factory: an openai SDK client for a gateway's base URL, closed after the test."""
    made: list[openai.OpenAI] = []

    def make(base_url: str) -> openai.OpenAI:
        made.append(client(base_url))
        return made[-1]

    yield make
    for each in made:
        each.close()
