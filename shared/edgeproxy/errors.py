"""The project's exceptions, every root of them; clients only ever see ``EdgeproxyError`` bodies.

    Exception
    ├── EdgeproxyError                  500 api_error (generic; message never leaked)
    │   ├── RequestError                400 invalid_request_error
    │   │   ├── BodyTooLarge            413
    │   │   ├── RequestTimeout          408 (the body arrived too slowly)
    │   │   ├── ModelNotFound           404 model_not_found
    │   │   ├── RouteNotFound           404 not_found (no such path)
    │   │   ├── MethodNotAllowed        405 method_not_allowed
    │   │   ├── NotFound                404 not_found (an admin resource id)
    │   │   ├── VersionConflict         409 version_conflict (a stale admin write)
    │   │   ├── AlreadyExists           409 already_exists (an admin create of a taken id)
    │   │   ├── IdempotencyInProgress   409 idempotency_in_progress (its first call still runs)
    │   │   ├── IdempotencyKeyReused    422 idempotency_key_reused (same key, another body)
    │   │   └── VersionRequired         428 version_required (an admin write without one)
    │   ├── AuthenticationError         401 invalid_api_key
    │   ├── PermissionDenied            403
    │   ├── RateLimited                 429 rate_limit_exceeded (shared capacity / limits)
    │   │   └── QuotaExceeded           429 insufficient_quota (a key's spend budget)
    │   ├── ModelOverloaded             503 model_overloaded (every circuit open, Retry-After)
    │   ├── ModelUnavailable            503 model_unavailable (misconfiguration opened all)
    │   ├── UpstreamError               the upstream's own status and sanitized message
    │   ├── DeadlineExceeded            504 timeout
    │   ├── GatewayFailure              500 gateway_error (the gateway failed, not a provider)
    │   └── StoreError                  500 (state backend failed)
    │       └── StoreUnavailable        503
    ├── UpstreamFault                   one attempt failed; ``.fault`` says how, as plain data
    ├── ClientGone                      the client's connection closed while its stream was sent
    ├── CredentialError                 a credential reference cannot be resolved
    ├── QuotaFetchError                 a quota source could not be read (the refresh job logs it)
    ├── QuotaRefreshFailed              a refresh run had failed sources (its invocation fails)
    ├── ValueError
    │   ├── ConfigError                 a configuration document is malformed or invalid
    │   │   └── EntryRefused            it breaks the egress or credential rule (``.param``)
    │   └── AnswerTooLarge              an answer too big to store (``state/answers``; never stored)
    ├── UsageError                      a command line the CLI cannot carry out
    └── RuntimeError
        └── MetricsUnavailable          EDGEPROXY_METRICS on without prometheus-client (no start)

Each ``EdgeproxyError`` maps to the OpenAI error JSON (``body``). The other
roots stop inside the project: the service judges an ``UpstreamFault`` (its
``Fault``, plain data drawn here so this module imports no room, is classified
in ``routing.failures``) into an ``EdgeproxyError`` or an in-band stream
error; the router turns a ``CredentialError`` into a configuration failure
of that deployment;
the CLI prints ``ConfigError`` and ``UsageError`` and exits with status 2;
the quota refresh records a ``QuotaFetchError`` beside the last good snapshot,
finishes the other sources, then raises ``QuotaRefreshFailed`` so the run fails
where operators see it (Lambda's Errors metric, the on-failure destination).
Anything else that reaches a handler is logged and answered as a generic 500.

Foreign errors are translated into this tree where their client is, most
specific first, with fixed texts: botocore's DynamoDB errors in
``state/dynamodb/table.py``, SSM's and Secrets Manager's in ``aws/secrets.py``, and
httpx's in ``upstream/errors.py``. pydantic's and YAML's become
``ConfigError`` in ``config/loader.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class EdgeproxyError(Exception):
    """Base: an error with an HTTP status and an OpenAI error body."""

    status: int = 500
    type: str = "api_error"
    code: str | None = None
    public: bool = False  # whether ``message`` may be shown to the client
    # Whether the same request, repeated by the client, could succeed; None: judged by
    # status (``api/errors.py``). False where the gateway already spent what a retry would.
    retryable: bool | None = None
    # This request's own fact: the gateway already made the retries a client would
    # (``x-should-retry: false`` whatever the class says).
    retries_spent: bool = False

    def __init__(
        self,
        message: str = "",
        *,
        param: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code
        self.retry_after = retry_after

    def body(self) -> dict[str, object]:
        """The OpenAI error JSON; non-public messages are replaced by a generic one."""
        message = (
            self.message if self.public else "The server had an error processing your request."
        )
        return {
            "error": {"message": message, "type": self.type, "param": self.param, "code": self.code}
        }


class RequestError(EdgeproxyError):
    status = 400
    type = "invalid_request_error"
    public = True


class BodyTooLarge(RequestError):
    status = 413
    code = "request_too_large"


class RequestTimeout(RequestError):
    status = 408
    code = "request_timeout"


class ModelNotFound(RequestError):
    status = 404
    code = "model_not_found"


class NotFound(RequestError):
    status = 404
    code = "not_found"


class RouteNotFound(RequestError):
    status = 404
    code = "not_found"


class VersionConflict(RequestError):
    """An admin write carried a version that is no longer the stored one."""

    status = 409
    code = "version_conflict"


class AlreadyExists(RequestError):
    status = 409
    code = "already_exists"


class IdempotencyInProgress(RequestError):
    """The first call with this ``Idempotency-Key`` still runs past this call's deadline."""

    status = 409
    code = "idempotency_in_progress"


class IdempotencyKeyReused(RequestError):
    """An ``Idempotency-Key`` already used with a different request body."""

    status = 422
    code = "idempotency_key_reused"


class VersionRequired(RequestError):
    status = 428
    code = "version_required"


class MethodNotAllowed(RequestError):
    status = 405
    code = "method_not_allowed"


class AuthenticationError(EdgeproxyError):
    status = 401
    type = "invalid_request_error"
    code = "invalid_api_key"
    public = True


class PermissionDenied(EdgeproxyError):
    status = 403
    type = "invalid_request_error"
    code = "permission_denied"
    public = True


class RateLimited(EdgeproxyError):
    status = 429
    type = "rate_limit_error"
    code = "rate_limit_exceeded"
    public = True


class QuotaExceeded(RateLimited):
    type = "insufficient_quota"
    code = "insufficient_quota"
    retryable = False  # a spent budget does not refill within an SDK's retries


class ModelOverloaded(EdgeproxyError):
    status = 503
    type = "server_error"
    code = "model_overloaded"
    public = True


class ModelUnavailable(EdgeproxyError):
    status = 503
    type = "server_error"
    code = "model_unavailable"
    public = True


class UpstreamError(EdgeproxyError):
    """An upstream's answer, relayed with its status and a sanitized message."""

    public = True

    def __init__(
        self,
        message: str,
        *,
        status: int,
        type: str = "api_error",
        code: str | None = None,
        param: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, param=param, code=code, retry_after=retry_after)
        self.status = status
        self.type = type


class DeadlineExceeded(EdgeproxyError):
    status = 504
    type = "api_error"
    code = "timeout"
    public = True
    # The gateway's deadline already covered its own attempts and failovers: an SDK
    # retry would spend the whole deadline again, once per retry.
    retryable = False


class GatewayFailure(EdgeproxyError):
    """The gateway itself failed for this request (e.g. fetching an upstream credential)."""

    status = 500
    type = "api_error"
    code = "gateway_error"
    public = True


class StoreError(EdgeproxyError):
    """The state backend failed in a way the caller cannot fix."""


class StoreUnavailable(StoreError):
    status = 503


class ClientGone(Exception):
    """The client's connection closed while its stream was being sent (the stream ends)."""


class FaultKind(StrEnum):
    """How one attempt failed (``Fault.kind``); ``routing.failures`` classifies it."""

    HTTP = "http"  # the upstream answered with an error status
    CONNECT = "connect"  # could not connect (refused, DNS, TLS)
    RESET = "reset"  # connection dropped before response headers
    TIMEOUT = "timeout"  # response_ms passed before the (JSON) answer / headers
    IDLE = "idle"  # stream silent for longer than idle_ms
    TRUNCATED = "truncated"  # stream ended (EOF or drop) before it was complete
    MALFORMED = "malformed"  # unparseable body or SSE chunk
    OVERSIZE = "oversize"  # answer, SSE event or stream beyond gateway.upstream_limits
    INCOMPATIBLE = "incompatible"  # the deployment cannot serve this request shape
    GATEWAY = "gateway"  # the gateway itself failed (credential fetch): no upstream was called


@dataclass(frozen=True, slots=True)
class Fault:
    """What went wrong with one attempt, as plain data (``UpstreamFault.fault``).

    Drawn here, beside the exception that carries it, so this module imports no
    room; ``routing.faults`` re-exports it for the core. Messages are already
    sanitized: no credentials, no upstream URLs.
    """

    kind: FaultKind
    message: str
    status: int | None = None
    type: str | None = None
    code: str | None = None
    param: str | None = None
    retry_after: float | None = None  # seconds, from the provider's Retry-After


class UpstreamFault(Exception):
    """An attempt failed; ``fault`` says how, as plain data for ``routing``.

    Raised only by ``upstream/`` (made in ``upstream/errors.py``).
    """

    def __init__(self, fault: Fault) -> None:
        super().__init__(f"{fault.kind}: {fault.message}")
        self.fault = fault


class CredentialError(Exception):
    """A reference that cannot be resolved. The message names the reference, never a value."""


class QuotaFetchError(Exception):
    """A quota source could not be read. The message names the source, never a credential."""


class QuotaRefreshFailed(Exception):
    """A quota refresh run stored what it could, but some sources failed.

    ``result`` is what the run did (``refreshed``: how many sources, ``failed``:
    their names); the message names the sources, never a credential.
    """

    def __init__(self, refreshed: int, failed: list[str]) -> None:
        super().__init__(f"quota refresh failed for {len(failed)} source(s): {', '.join(failed)}")
        self.result: dict[str, object] = {"refreshed": refreshed, "failed": failed}


class ConfigError(ValueError):
    """A configuration document is malformed or invalid."""


class EntryRefused(ConfigError):
    """A document breaks an entry rule (``config.entry_rules``); ``param`` names the field."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


class AnswerTooLarge(ValueError):
    """An answer whose compressed size passes ``state.answers.MAX_STORED_BYTES`` (never stored)."""


class UsageError(Exception):
    """A command line that cannot be carried out as given (exit status 2)."""


class MetricsUnavailable(RuntimeError):
    """``EDGEPROXY_METRICS=on`` without ``prometheus-client`` installed: the process does not
    start (a scrape target that silently answers 404 would look like an outage)."""
