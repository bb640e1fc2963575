"""The Lambda-facing pieces: stage paths and the streaming entry's held end of response."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from edgeproxy.api.handler import without_stage
from edgeproxy.api.streaming import HoldEnd


def event(stage: str, path: str) -> dict[str, Any]:
    return {"rawPath": path, "requestContext": {"stage": stage, "http": {"path": path}}}


def test_a_named_stage_is_stripped_from_both_paths() -> None:
    stripped = without_stage(event("dev", "/dev/v1/chat/completions"))
    assert stripped["rawPath"] == "/v1/chat/completions"
    assert stripped["requestContext"]["http"]["path"] == "/v1/chat/completions"
    assert without_stage(event("dev", "/dev"))["rawPath"] == "/"


def test_the_default_stage_and_lookalike_prefixes_are_left_alone() -> None:
    plain = event("$default", "/v1/models")
    assert without_stage(plain) is plain
    # "/devices" does not start with the stage "/dev" as a path segment.
    assert without_stage(event("dev", "/devices/v1"))["rawPath"] == "/devices/v1"
    assert without_stage({"rawPath": "/v1/models"}) == {"rawPath": "/v1/models"}


async def test_the_end_of_the_body_waits_for_the_apps_background_work() -> None:
    log: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
        await asyncio.sleep(0)
        log.append("outcome written")  # what a Starlette background task does here

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body":
            log.append("end" if not message.get("more_body") else message["body"].decode())

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    await HoldEnd(app)({"type": "http"}, receive, send)
    assert log == ["data: 1\n\n", "data: [DONE]\n\n", "outcome written", "end"]
