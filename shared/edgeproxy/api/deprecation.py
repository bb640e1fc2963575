"""The deprecation notice on answers to a deprecated model alias (RFC 9745, RFC 8594).

``Deprecation: @<epoch seconds>`` (a structured-field date, RFC 9745),
``Sunset: <HTTP-date>`` (RFC 8594) and ``Link: <url>; rel="deprecation"``,
as configured under ``aliases.<name>.deprecation``. Names that are no
deprecated alias get none.
"""

from __future__ import annotations

from edgeproxy.config.models import GatewayConfig


def notice(config: GatewayConfig, requested: str) -> dict[str, str]:
    """The headers announcing that ``requested`` (as the client wrote it) is deprecated."""
    alias = config.aliases.get(requested.partition(":")[0])
    if alias is None or alias.deprecation is None:
        return {}
    return alias.deprecation.headers()
