"""Posting one alert to the webhook, under the upstream egress rule.

``config.alerts.webhook_problem`` judges the URL at load and admin-write
time, and again before each post; ``post`` connects through the
egress-guarded resolver, so a name that resolves into a refused range is
refused at connect time too (DNS rebinding). HTTPS is verified with the
process's one context (``tls.verified_context``, certifi's bundle), never
aiohttp's import-time default, which a Lambda function's ``lean_init`` leaves
trusting nothing.
"""

from __future__ import annotations

import aiohttp

from edgeproxy.config.alerts import webhook_problem
from edgeproxy.config.egress import EgressSettings
from edgeproxy.service.alerts.signature import HEADER, sign
from edgeproxy.upstream.egress import EGRESS, guarded_connector

POST_TIMEOUT_S = 5.0  # one delivery attempt, off the request path


async def post(
    url: str, egress: EgressSettings, secret: bytes, body: bytes, timestamp: int
) -> bool:
    """Send ``body`` signed; True on a 2xx answer (anything else is retried later)."""
    if webhook_problem(url, egress) is not None:
        return False
    token = EGRESS.set(egress)  # the guarded resolver judges the names it resolves
    headers = {"content-type": "application/json", HEADER: sign(secret, timestamp, body)}
    connector = guarded_connector()
    timeout = aiohttp.ClientTimeout(total=POST_TIMEOUT_S)
    try:
        async with (
            aiohttp.ClientSession(connector=connector, timeout=timeout) as session,
            session.post(url, data=body, headers=headers, allow_redirects=False) as answer,
        ):
            return 200 <= answer.status < 300
    except (aiohttp.ClientError, TimeoutError, OSError):
        return False
    finally:
        EGRESS.reset(token)
