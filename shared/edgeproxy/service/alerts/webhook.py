"""Posting one alert to the webhook, under the upstream egress rule.

``webhook_problem`` judges the URL at load and admin-write time (a literal
address, the scheme, credentials in it); ``post`` connects through the
egress-guarded resolver, so a name that resolves into a refused range is
refused at connect time too (DNS rebinding).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp

from edgeproxy.config.egress import EgressSettings, literal_address, local_loopback, url_host
from edgeproxy.service.alerts.signature import HEADER, sign
from edgeproxy.upstream.egress import EGRESS, GuardedResolver, literal_refusal

POST_TIMEOUT_S = 5.0  # one delivery attempt, off the request path


def webhook_problem(url: str, egress: EgressSettings) -> str | None:
    """Why ``url`` may not receive alerts (None: it may); the text names the field."""
    if not url.isprintable() or any(char.isspace() for char in url):
        return "webhook_url holds a control or space character"
    parts = urlsplit(url)
    host = url_host(url)
    if parts.scheme not in ("https", "http") or not host:
        return "webhook_url must be an https URL with a host"
    if parts.username or parts.password:
        return "webhook_url must not carry credentials"
    address = literal_address(host)
    allowed = egress.allows_host(host) or (address is not None and egress.allows_address(address))
    if parts.scheme == "http" and not (allowed or local_loopback()):
        return "webhook_url must use https"
    reason = literal_refusal(url, egress)
    return None if reason is None else f"webhook_url is refused by the egress rule: {reason}"


async def post(
    url: str, egress: EgressSettings, secret: bytes, body: bytes, timestamp: int
) -> bool:
    """Send ``body`` signed; True on a 2xx answer (anything else is retried later)."""
    if webhook_problem(url, egress) is not None:
        return False
    token = EGRESS.set(egress)  # the guarded resolver judges the names it resolves
    headers = {"content-type": "application/json", HEADER: sign(secret, timestamp, body)}
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(aiohttp.DefaultResolver()))
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
