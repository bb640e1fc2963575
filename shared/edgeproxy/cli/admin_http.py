"""``admin_request``: one blocking call to a running gateway's admin API, for a command's ``--url`` form.

The key and team commands (``cli/keys.py``, ``cli/teams.py``) send one
request and print its answer; the admin key comes from the environment
(``target.admin_key``), never an argument. An unreachable gateway or an
error answer is an ``EdgeproxyError`` with one line: the error's message, or
the answer's first 200 characters (never the key).
"""

from __future__ import annotations

import argparse
from typing import Any

import httpx

from edgeproxy.cli import target as cli_target
from edgeproxy.errors import EdgeproxyError

TIMEOUT_S = 30.0


def admin_request(
    args: argparse.Namespace,
    method: str,
    path: str,
    body: Any = None,
    params: dict[str, Any] | None = None,
) -> Any:
    """``method path`` (JSON ``body``, query ``params``) on the gateway ``args`` name; its JSON
    answer."""
    admin_key = cli_target.admin_key(args)
    base = cli_target.url_of(args) or ""
    headers = {"authorization": f"Bearer {admin_key}"}
    try:
        answer = httpx.request(
            method,
            base.rstrip("/") + path,
            json=body,
            params=params,
            headers=headers,
            timeout=TIMEOUT_S,
        )
    except httpx.HTTPError as exc:
        raise EdgeproxyError(f"cannot reach {base}: {type(exc).__name__}") from None
    if answer.status_code >= 400:
        try:
            message = answer.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = answer.text[:200]
        raise EdgeproxyError(f"{answer.status_code}: {message}")
    return answer.json()
