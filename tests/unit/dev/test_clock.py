"""The dev clock: real time plus an offset that only grows, movable over HTTP by the runner."""

from __future__ import annotations

import time

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from edgeproxy_dev.clock import CLOCK_PATH, Clock, clock_control


def test_advance_moves_every_later_reading() -> None:
    clock = Clock()
    before = time.time()
    clock.advance(3600)
    assert before + 3600 <= clock.now() <= time.time() + 3600
    assert clock.offset == 3600


def test_time_never_runs_backwards() -> None:
    clock = Clock(offset=10)
    with pytest.raises(ValueError, match="forward"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="forward"):
        clock.set_offset(5)
    clock.set_offset(10)  # idempotent: a follower may be told the same offset twice
    assert clock.offset == 10


def test_clock_control_sets_the_offset_and_passes_everything_else_on() -> None:
    async def hello(_: object) -> PlainTextResponse:
        return PlainTextResponse("hello")

    clock = Clock()
    app = clock_control(Starlette(routes=[Route("/hello", hello)]), clock)
    with TestClient(app) as client:
        assert client.post(CLOCK_PATH, json={"offset": 42}).json() == {"offset": 42}
        assert clock.offset == 42
        assert client.post(CLOCK_PATH, json={"offset": 1}).status_code == 400
        assert client.post(CLOCK_PATH, content=b"not json").status_code == 400
        assert client.get("/hello").text == "hello"
