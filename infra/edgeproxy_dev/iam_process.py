"""moto's every-service server with IAM enforced, and a log of the IAM actions each call needed.

Run as ``python -m edgeproxy_dev.iam_process [--port N]``: prints ``aws on
http://127.0.0.1:PORT`` once it listens and serves DynamoDB, SSM, Secrets
Manager, IAM and STS (moto's whole dispatcher) behind ``dynamo_front`` (one
request at a time, kept-alive) until its stdin closes. ``EnforcedAws`` in
``iam_server`` starts it.

Authorization is off until ``POST /moto-api/reset-auth`` with ``0`` (moto's
``INITIAL_NO_AUTH_ACTION_COUNT``); from then on every call must be signed
with an IAM user's or an assumed role's credentials and allowed by its
policies. Two gaps of moto's enforcement are closed here:

- moto evaluates every non-S3 call against the resource ``*``, which no
  statement naming a table or parameter ARN matches; here moto sees the
  call's real resource (``_determine_resource``, the hook moto's own IAM
  and STS responses use);
- a DynamoDB transaction is checked per item against the caller's policies
  with moto's own evaluator (``iam_actions``), as IAM does; moto checks only
  ``dynamodb:TransactWriteItems``, which IAM does not have.

Every signed call is logged (``GET /_rehearsal/calls``): access key, the IAM
actions it needed, its status, and the denial when it was refused (by moto,
or by the per-item check).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

from moto.core.responses import BaseResponse
from moto.iam.access_control import CreateAccessKeyFailure, IAMPolicy, PermissionResult
from moto.iam.access_control import create_access_key as moto_access_key
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

from edgeproxy_dev import iam_actions
from edgeproxy_dev.dynamo_front import WSGIApp, call_app
from edgeproxy_dev.dynamo_process import run

READY = "aws on "
ACCOUNT = "123456789012"  # moto's default account
LOG_PATH = "/_rehearsal/calls"
DENIAL_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "SignatureDoesNotMatch",
        "InvalidSignatureException",
        "ExpiredTokenException",
    }
)
# moto's XML refusals -> the JSON error the JSON-protocol services answer with.
JSON_CODES = {
    "AccessDenied": "AccessDeniedException",
    "InvalidClientTokenId": "UnrecognizedClientException",
    "SignatureDoesNotMatch": "InvalidSignatureException",
}
_RESOURCE: contextvars.ContextVar[str] = contextvars.ContextVar("resource", default="*")
_CREDENTIAL = re.compile(r"Credential=([^/]+)/\d+/([^/]+)/([^/]+)/")
_XML_CODE = re.compile(rb"<Code>(\w+)</Code>")


def _determine_resource(self: BaseResponse) -> str:
    return _RESOURCE.get()


# Services with their own hook (IAM, STS, SQS) keep it; the others see the call's resource.
BaseResponse._determine_resource = _determine_resource  # type: ignore[attr-defined]


def error_code(body: bytes) -> str | None:
    """The error code of an AWS error answer, JSON (``__type``) or XML (``<Code>``)."""
    with contextlib.suppress(ValueError, AttributeError):
        kind = json.loads(body).get("__type")
        if kind:
            return str(kind).rsplit("#", 1)[-1]
    found = _XML_CODE.search(body)
    return found.group(1).decode() if found else None


def _allowed(access_key: Any, action: str, resource: str) -> bool:
    permitted = False
    for policy in access_key.collect_policies():
        result = IAMPolicy(policy).is_action_permitted(action, resource)
        if result == PermissionResult.DENIED:
            return False
        permitted = permitted or result == PermissionResult.PERMITTED
    return permitted


class CallLog:
    """WSGI middleware: records each signed call's IAM actions and outcome; checks transactions."""

    def __init__(self, app: WSGIApp) -> None:
        self._app = app
        self.calls: list[dict[str, Any]] = []

    def __call__(self, environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == LOG_PATH:
            if environ["REQUEST_METHOD"] == "DELETE":
                self.calls.clear()
            start("200 OK", [("Content-Type", "application/json")])
            return [json.dumps({"calls": self.calls}).encode()]
        found = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
        if found is None:
            return self._app(environ, start)
        key_id, region, service = found.groups()
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        operation = str(environ.get("HTTP_X_AMZ_TARGET", "")).rsplit(".", 1)[-1]
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            request = {}
        if not operation or not isinstance(request, dict):
            return self._app(environ, start)
        needed = iam_actions.needed(service, operation, request, region=region, account=ACCOUNT)
        entry: dict[str, Any] = {
            "key": key_id,
            "service": service,
            "operation": operation,
            "actions": [action for action, _ in needed],
            "resources": sorted({resource for _, resource in needed}),
        }
        self.calls.append(entry)
        refused = self._refused_items(environ, key_id, operation, needed)
        if refused:
            entry.update(status=400, denied=f"AccessDeniedException ({', '.join(refused)})")
            return self._deny(start, ", ".join(refused))
        token = _RESOURCE.set(needed[0][1] if needed else "*")
        try:
            status, headers, out = call_app(self._app, environ)
        finally:
            _RESOURCE.reset(token)
        code = error_code(out) if not status.startswith("2") else None
        entry.update(status=int(status.split()[0]), code=code)
        if code in DENIAL_CODES:
            entry["denied"] = code
            if code in JSON_CODES:  # moto's XML; these JSON services answer as below
                return self._deny(start, str(entry["actions"]), JSON_CODES[code])
        start(status, headers)
        return [out]

    @staticmethod
    def _deny(
        start: Callable[..., Any], what: str, code: str = "AccessDeniedException"
    ) -> Iterable[bytes]:
        """Refuse as DynamoDB, SSM and Secrets Manager do: 400 and a JSON error."""
        start("400 Bad Request", [("Content-Type", "application/x-amz-json-1.0")])
        message = f"not authorized to perform: {what}"
        return [json.dumps({"__type": code, "message": message}).encode()]

    def _refused_items(
        self, environ: dict[str, Any], key_id: str, operation: str, needed: list[tuple[str, str]]
    ) -> list[str]:
        """A transaction's item actions its caller's policies do not allow (only once enforced)."""
        if operation not in iam_actions.TRANSACTIONS or not _enforced():
            return []
        headers = {}
        if "HTTP_X_AMZ_SECURITY_TOKEN" in environ:
            headers["X-Amz-Security-Token"] = environ["HTTP_X_AMZ_SECURITY_TOKEN"]
        try:
            access_key = moto_access_key(ACCOUNT, "aws", key_id, headers)
        except CreateAccessKeyFailure:
            return []  # an unknown key: moto refuses the call itself
        return [action for action, arn in needed if not _allowed(access_key, action, arn)]


def _enforced() -> bool:
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin

    return ActionAuthenticatorMixin.request_count >= settings.INITIAL_NO_AUTH_ACTION_COUNT


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="moto with IAM enforcement, on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    args = parser.parse_args(argv)
    app = CallLog(DomainDispatcherApplication(create_backend_app))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(app, args.port, banner=READY))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
