"""One request's log entry: what is noted while it runs, and the record it ends as.

The gateway opens an ``Entry`` when routing starts, notes when routing
returned (``routed``) and a stream's first token (``first_token``), and
turns it into a ``RequestRecord`` however the request ended: ``served``
(an answer, whole or cut) or ``failed`` (an error, a refusal, a client that
left). The record reads the routing trace for the deployments tried; the
cost is the serving deployment's prices applied to the tokens the success
write counted, so it is the key's spend to the cent.

    added_ms    the gateway's own time before the answer: time to the answer
                (a JSON body, a stream's opening) minus every attempt's time
    upstream_ms every attempt's time to its answer (a stream: to its opening)
    latency_ms  request start to its end (a stream: its last event)
    ttft_ms     a stream's first content chunk (None for JSON answers)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from edgeproxy.config.request_log import RequestLogSettings
from edgeproxy.errors import EdgeproxyError
from edgeproxy.routing.access import cost_usd
from edgeproxy.service.run import Run
from edgeproxy.service.trace import AttemptRecord
from edgeproxy.service.usage.capture import kept
from edgeproxy.state.usage_log import DAY_S, RequestRecord

CLIENT_GONE = 499


@dataclass(slots=True)
class Entry:
    """A request's log entry while it runs (times from the gateway's clock)."""

    run: Run
    settings: RequestLogSettings
    clock: Callable[[], float]
    started_at: float
    routed_at: float | None = None
    first_token_at: float | None = None
    answer_parts: list[str] = field(default_factory=list)
    done: bool = False  # a record was made (one per request)
    stored: bool = True  # False: the record is only counted (metrics), the log is off

    @property
    def captures(self) -> bool:
        """Whether this request's pool keeps its prompt and answer."""
        return self.stored and self.run.req.model in self.settings.bodies

    def routed(self) -> None:
        self.routed_at = self.clock()

    def first_token(self) -> None:
        if self.first_token_at is None:
            self.first_token_at = self.clock()

    def served(
        self,
        deployment_id: str,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        answer: Any = None,
        cut: EdgeproxyError | None = None,
        estimated: bool = False,
        cache: tuple[int, int] = (0, 0),
    ) -> RequestRecord:
        """The record of an answer served by ``deployment_id`` (``cut``: a stream cut for good;
        ``estimated``: the tokens are the gateway's estimate, the upstream reported none;
        ``cache``: the prompt-cache reads and writes among ``prompt_tokens``)."""
        run = self.run
        dep = run.config.deployment(deployment_id)
        read, write = cache if cut is None else (0, 0)
        cost = 0.0
        if dep is not None and cut is None:
            cost = cost_usd(dep, prompt_tokens, completion_tokens, read, write)
        failure = _last_failure(run.trace.attempts) if cut is not None else None
        if answer is None and self.answer_parts:
            answer = "".join(self.answer_parts)
        return replace(
            self._base(200, "stream_cut" if cut is not None else "success"),
            deployment=deployment_id,
            served_model=run.trace.served_model,
            failure_class=failure or (cut.code or cut.type if cut is not None else None),
            prompt_tokens=prompt_tokens if cut is None else 0,
            completion_tokens=completion_tokens if cut is None else 0,
            cache_read_tokens=read,
            cache_write_tokens=write,
            uncached_input_tokens=max(0, prompt_tokens - read - write) if cut is None else 0,
            usage_estimated=estimated and cut is None,
            cost_usd=cost,
            answer=kept(self.settings, run.req.model, answer),
        )

    def hit(self, deployment_id: str | None, saved_usd: float) -> RequestRecord:
        """The record of an answer the response cache served: no attempt, nothing spent,
        ``saved_usd`` what the stored answer cost when it was first served."""
        return replace(
            self._base(200, "success"),
            deployment=deployment_id,
            cache="hit",
            saved_usd=saved_usd,
        )

    def failed(self, exc: BaseException) -> RequestRecord:
        """The record of a request that ended in ``exc`` before an answer."""
        attempts = [a for a in self.run.trace.attempts if a.error_kind != "abandoned"]
        if isinstance(exc, asyncio.CancelledError):
            return replace(self._base(CLIENT_GONE, "client_gone"), failure_class="client_gone")
        if isinstance(exc, EdgeproxyError):
            outcome = "failed" if attempts else "refused"
            failure = _last_failure(attempts) or exc.code or exc.type
            return replace(self._base(exc.status, outcome), failure_class=failure)
        return replace(self._base(500, "failed"), failure_class="gateway")

    def gone(self) -> RequestRecord:
        """The record of a stream whose client left before its end."""
        return replace(self._base(CLIENT_GONE, "client_gone"), failure_class="client_gone")

    def _base(self, status: int, outcome: str) -> RequestRecord:
        run, req, now = self.run, self.run.req, self.clock()
        attempts = run.trace.attempts
        upstream_ms = sum(a.latency_ms for a in attempts)
        answered = self.routed_at if self.routed_at is not None else now
        key = req.key
        return RequestRecord(
            at=self.started_at,
            request_id=req.request_id,
            model=req.model,
            operation=req.operation.value,
            stream=req.stream,
            status=status,
            outcome=outcome,
            expires_at=self.started_at + self.settings.retention_days * DAY_S,
            key_id=key.id if key is not None else None,
            key_name=key.name if key is not None else None,
            team=key.team_id if key is not None else None,
            end_user=req.end_user,
            tried=tuple(a.deployment_id for a in attempts),
            attempts=len(attempts),
            continued=any(a.continuation for a in attempts),
            anomalies=tuple(f"{a.deployment_id}:{x}" for a in attempts for x in a.anomalies),
            notes=tuple(f"{a.deployment_id}:{x}" for a in attempts for x in a.notes),
            latency_ms=_ms(now - self.started_at),
            upstream_ms=upstream_ms,
            added_ms=max(0, _ms(answered - self.started_at) - upstream_ms),
            ttft_ms=None
            if self.first_token_at is None
            else _ms(self.first_token_at - self.started_at),
            prompt=kept(self.settings, req.model, req.body),
            cache=req.cache,
        )


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def _last_failure(attempts: list[AttemptRecord]) -> str | None:
    return next((a.error_class for a in reversed(attempts) if a.error_class), None)


def serving_attempt(attempts: list[AttemptRecord], deployment_id: str) -> AttemptRecord | None:
    """The attempt of ``deployment_id`` that answered last (a continued stream's last leg)."""
    return next(
        (
            a
            for a in reversed(attempts)
            if a.deployment_id == deployment_id and a.error_kind is None
        ),
        None,
    )
