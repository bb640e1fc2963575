"""Execution policies: the deadline matrix, one row per operation (``router.execution_policies``)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import ConfigDict, Field

from edgeproxy.config.base import Positive, Strict


class Operation(StrEnum):
    """Operations with their own execution policy (rows of the deadline matrix)."""

    CHAT = "chat"
    EMBEDDINGS = "embeddings"
    IMAGES = "images"
    AUDIO = "audio"
    VIDEO_SUBMIT = "video_submit"
    VIDEO_DOWNLOAD = "video_download"
    # The OpenAI Responses API (``/v1/responses``); a deployment listing it is sent
    # such requests as they are, the others (serving ``chat``) get them translated.
    RESPONSES = "responses"
    COMPLETIONS = "completions"  # legacy text completions (``POST /v1/completions``)


class Deadline(Strict):
    """How long the gateway waits, for one operation in one mode (json or stream).

    ``response_ms``: JSON, until the whole upstream answer arrived; stream, until
    the upstream sent response headers. ``idle_ms``: stream only, the longest
    silence between two upstream bytes (``None`` disables it). ``total_ms``: the
    whole request across attempts, retries and fallbacks.
    """

    response_ms: Positive
    idle_ms: Positive | None = None
    total_ms: Positive
    max_attempts: Positive

    def tightened_by(self, override: DeadlineOverride) -> Deadline:
        """Apply ``override``; raises ValueError if it loosens any value."""
        values = self.model_dump()
        for name, value in override.model_dump(exclude_none=True).items():
            current = values[name]
            if current is not None and value > current:
                raise ValueError(
                    f"execution policy override {name}={value} is looser than the "
                    f"global {current}; overrides may only tighten"
                )
            values[name] = value
        return Deadline(**values)


class DeadlineOverride(Strict):
    response_ms: Positive | None = None
    idle_ms: Positive | None = None
    total_ms: Positive | None = None
    max_attempts: Positive | None = None


class OperationPolicy(Strict):
    json_: Deadline = Field(alias="json")
    stream: Deadline

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class OperationPolicyOverride(Strict):
    json_: DeadlineOverride | None = Field(default=None, alias="json")
    stream: DeadlineOverride | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _policy(
    response_s: int,
    idle_s: int | None,
    total_s: int,
    attempts: int,
    *,
    json_response_s: int | None = None,
    json_idle: bool = False,
) -> OperationPolicy:
    stream = Deadline(
        response_ms=response_s * 1000,
        idle_ms=None if idle_s is None else idle_s * 1000,
        total_ms=total_s * 1000,
        max_attempts=attempts,
    )
    json = Deadline(
        response_ms=(json_response_s or response_s) * 1000,
        idle_ms=stream.idle_ms if json_idle else None,
        total_ms=total_s * 1000,
        max_attempts=attempts,
    )
    return OperationPolicy(json=json, stream=stream)


def default_execution_policies() -> dict[Operation, OperationPolicy]:
    """The spec's deadline matrix (defaults match the official SDKs' 600 s read timeout)."""
    return {
        Operation.CHAT: OperationPolicy(
            json=Deadline(response_ms=600_000, total_ms=1_800_000, max_attempts=3),
            stream=Deadline(
                response_ms=600_000, idle_ms=600_000, total_ms=3_600_000, max_attempts=3
            ),
        ),
        # Legacy completions are text generation too: the chat row of the matrix.
        Operation.COMPLETIONS: OperationPolicy(
            json=Deadline(response_ms=600_000, total_ms=1_800_000, max_attempts=3),
            stream=Deadline(
                response_ms=600_000, idle_ms=600_000, total_ms=3_600_000, max_attempts=3
            ),
        ),
        Operation.EMBEDDINGS: _policy(120, None, 300, 3),
        Operation.IMAGES: _policy(600, 300, 1800, 2),
        Operation.AUDIO: _policy(600, 300, 1800, 2, json_response_s=900),
        Operation.VIDEO_SUBMIT: _policy(120, None, 300, 2),
        Operation.VIDEO_DOWNLOAD: _policy(120, 120, 900, 2, json_idle=True),
        Operation.RESPONSES: OperationPolicy(  # a chat turn in another shape: chat's deadlines
            json=Deadline(response_ms=600_000, total_ms=1_800_000, max_attempts=3),
            stream=Deadline(
                response_ms=600_000, idle_ms=600_000, total_ms=3_600_000, max_attempts=3
            ),
        ),
    }
