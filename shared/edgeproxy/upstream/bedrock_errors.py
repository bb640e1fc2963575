"""Bedrock's errors (botocore, aiohttp, the event-stream parser) as ``UpstreamFault``.

The Bedrock counterpart of ``translate_errors`` in ``errors.py``, and the only
place botocore exceptions of the upstream client are caught. An error answer
becomes an HTTP fault with the status and OpenAI-style type/code the
classification in ``routing/failures.py`` reads, so every resilience rule
applies as for any provider:

    ThrottlingException, ServiceQuotaExceededException   429  throttle (capacity circuit)
    ValidationException                                  400  request error (context window:
                                                              code context_length_exceeded)
    AccessDeniedException, UnrecognizedClient, ...       403 / 401  configuration (quarantine)
    ResourceNotFoundException, invalid model id          404 / 400 model_not_found: configuration
    ModelNotReady, ServiceUnavailable, InternalServer,   5xx  transient (failover)
    ModelError, ModelStreamError, ModelTimeout

Error codes are matched case-insensitively: exceptions inside a stream are
named by their event (``throttlingException``). Transport failures follow
the phase, as for httpx; missing AWS credentials are the gateway's own fault.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import aiohttp
from botocore.eventstream import ParserError
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    CredentialRetrievalError,
    HTTPClientError,
    NoAuthTokenError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
    ReadTimeoutError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError

from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.errors import Phase, fault, sanitize

_THROTTLED = (429, "rate_limit_error", "rate_limit_exceeded")
_DENIED = (403, "permission_error", None)
_UNAUTHENTICATED = (401, "authentication_error", "invalid_api_key")
_CODES: dict[str, tuple[int, str, str | None]] = {
    "throttlingexception": _THROTTLED,
    "servicequotaexceededexception": _THROTTLED,
    "toomanyrequestsexception": _THROTTLED,
    "validationexception": (400, "invalid_request_error", None),
    "accessdeniedexception": _DENIED,
    "unrecognizedclientexception": _UNAUTHENTICATED,
    "invalidsignatureexception": _UNAUTHENTICATED,
    "expiredtokenexception": _UNAUTHENTICATED,
    "resourcenotfoundexception": (404, "invalid_request_error", "model_not_found"),
    "modelnotreadyexception": (503, "server_error", None),
    "serviceunavailableexception": (503, "server_error", None),
    "internalserverexception": (500, "server_error", None),
    "modelerrorexception": (502, "server_error", None),
    "modelstreamerrorexception": (502, "server_error", None),
    "modeltimeoutexception": (504, "server_error", None),
}
# ValidationException covers both the caller's mistakes and the deployment's:
# these messages name the deployment's model id, which no retry elsewhere fixes...
_MODEL_MARKERS = ("model identifier is invalid", "on-demand throughput", "model id is invalid")
# ... and these a prompt beyond the model's context window (the context_window chain).
_CONTEXT_MARKERS = ("too long", "too many input tokens", "context window", "maximum context length")
_CREDENTIALS = (
    NoCredentialsError,
    PartialCredentialsError,
    CredentialRetrievalError,
    NoAuthTokenError,
)


@contextmanager
def translate_bedrock_errors(phase: Phase, secrets: Sequence[str | None]) -> Iterator[None]:
    """Turn botocore, aiohttp and event-stream errors raised inside the block into faults.

    Messages of transport errors are fixed texts: botocore's name the endpoint.
    """
    try:
        yield
    except ClientError as exc:  # an error answer, or an exception event in a stream
        raise client_fault(exc.response, secrets) from exc
    except ParamValidationError as exc:
        message = sanitize(f"the request does not fit Bedrock's Converse API: {exc}", secrets)
        raise fault(FaultKind.HTTP, message, status=400, type="invalid_request_error") from exc
    except _CREDENTIALS as exc:
        raise fault(FaultKind.GATEWAY, "no AWS credentials for bedrock deployments") from exc
    except BotoConnectionError as exc:  # botocore's: connect failures and connect timeouts
        raise fault(FaultKind.CONNECT, "could not connect to the upstream") from exc
    except ReadTimeoutError as exc:
        raise fault(phase.on_timeout, f"deadline passed while {phase.name}") from exc
    except (ConnectionClosedError, HTTPClientError, aiohttp.ClientError) as exc:
        raise fault(phase.on_drop, f"connection dropped while {phase.name}") from exc
    except ParserError as exc:
        raise fault(FaultKind.MALFORMED, "the upstream's event stream is malformed") from exc
    except BotoCoreError as exc:
        raise fault(FaultKind.GATEWAY, f"the bedrock client failed ({type(exc).__name__})") from exc


def client_fault(response: Mapping[str, Any], secrets: Sequence[str | None]) -> UpstreamFault:
    """The fault for a botocore error response (``ClientError.response``)."""
    error = response.get("Error") or {}
    code = str(error.get("Code") or "")
    message = str(error.get("Message") or "") or f"Bedrock answered {code or 'an error'}."
    metadata = response.get("ResponseMetadata") or {}
    status, type_, openai_code = _CODES.get(
        code.lower(), (int(metadata.get("HTTPStatusCode") or 500), "api_error", None)
    )
    lowered = message.lower()
    if code.lower() == "validationexception":
        if any(marker in lowered for marker in _MODEL_MARKERS):
            openai_code = "model_not_available"
        elif any(marker in lowered for marker in _CONTEXT_MARKERS):
            openai_code = "context_length_exceeded"
    # Bedrock sends no Retry-After: the throttle cooldown of the router settings applies.
    return fault(
        FaultKind.HTTP, sanitize(message, secrets), status=status, type=type_, code=openai_code
    )
