"""A stored credential cannot be redirected: changing ``base_url`` means restating the secrets.

An admin who may change a deployment's ``base_url`` but does not know its
key could otherwise point the deployment at a host of theirs and receive
the key with the next request. So a PUT or PATCH that changes ``base_url``
must send ``credential`` (and ``headers``, whose values count as secrets)
again, whenever the deployment has them; restating the same reference is
enough, it shows the writer meant that reference for that host.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from edgeproxy.errors import RequestError
from edgeproxy.service.admin.redaction import REDACTED, SECRET_MAPS

Document = dict[str, Any]
Change = Callable[[Document], None]
SECRET_FIELDS = ("credential", "headers", "query")


def _find(document: Document, deployment_id: str) -> dict[str, Any] | None:
    return next((d for d in document.get("deployments", []) if d.get("id") == deployment_id), None)


def restating(change: Change, deployment_id: str, body: Mapping[str, Any]) -> Change:
    """``change``, refused with a 400 if it moves ``base_url`` without restating the secrets."""

    def apply(document: Document) -> None:
        before = _find(document, deployment_id)
        before = dict(before) if before is not None else None
        change(document)
        after = _find(document, deployment_id)
        if before is None or after is None:
            return
        moved = before.get("base_url") != after.get("base_url")
        _keep_redacted(before, after, moved)
        if not moved:
            return
        for name in SECRET_FIELDS:
            if before.get(name) and after.get(name) and name not in body:
                raise RequestError(
                    f"Changing base_url requires restating {name}: the stored {name} is not "
                    "sent to a new host unless this request names it again.",
                    param=name,
                )

    return apply


def _keep_redacted(before: dict[str, Any], after: dict[str, Any], moved: bool) -> None:
    """Values sent back as ``REDACTED`` keep the stored value (not to a new ``base_url``)."""
    for name in sorted(SECRET_MAPS):  # a fixed order: the first refusal names the same field
        values = after.get(name)
        if not isinstance(values, dict):
            continue
        stored = before.get(name) or {}
        for key, value in list(values.items()):
            if value != REDACTED:
                continue
            if moved or key not in stored:
                raise RequestError(
                    f"{name}.{key}: send the value itself ({REDACTED} stands for the stored "
                    "value, which is kept only while base_url stays).",
                    param=name,
                )
            values[key] = stored[key]
