"""Which endpoints a ``provider: bedrock`` deployment may send its SigV4-signed requests to.

A Bedrock request is signed with the process's AWS credentials (on Lambda,
the role's session token included), so its ``base_url`` may only name an AWS
Bedrock runtime endpoint, over https on port 443, or an endpoint the owner
lists (a VPC endpoint; a local stand-in for tests):

    https://bedrock-runtime.us-east-1.amazonaws.com          (and -fips, .amazonaws.com.cn,
    https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com   the dual-stack .api.aws)
    gateway:
      egress:
        bedrock_endpoints: ["https://vpce-0a1b-2c3d.bedrock-runtime.us-east-1.vpce.amazonaws.com"]

An entry is an origin (``scheme://host[:port]``; a bare host means https).
``gateway.egress`` is the owner's section (``config.roles``). The rule is
checked when a configuration comes in (``entry_rules``) and again when a
request is signed (``upstream.bedrock``): one URL split and one match.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from urllib.parse import urlsplit

_RUNTIME = re.compile(
    r"https://bedrock-runtime(-fips)?\.[a-z]{2}(-[a-z]+)+-\d+\.(amazonaws\.com(\.cn)?|api\.aws)"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_USAGE = (
    "bedrock deployments send signed requests only to https://bedrock-runtime[-fips].<region>"
    ".amazonaws.com[.cn] (or .api.aws), or to an endpoint listed in "
    "gateway.egress.bedrock_endpoints"
)


@functools.lru_cache(maxsize=1024)  # pure; a process signs for few distinct URLs
def origin(url: str) -> str | None:
    """``scheme://host[:port]`` of ``url`` (lower case, default port left out), or None if
    it has none or carries credentials."""
    try:
        parts = urlsplit(url if "://" in url else "https://" + url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return None
    shown = "" if port in (None, _DEFAULT_PORTS[parts.scheme]) else f":{port}"
    host = parts.hostname.rstrip(".")
    return f"{parts.scheme}://{f'[{host}]' if ':' in host else host}{shown}"


def signable(url: str, listed: Collection[str] = ()) -> bool:
    """Whether SigV4 may be computed for a request to ``url`` (``listed``: normalized origins)."""
    found = origin(url)
    return found is not None and (_RUNTIME.fullmatch(found) is not None or found in listed)


def endpoint_problem(base_url: str | None, listed: Collection[str] = ()) -> str | None:
    """Why ``base_url`` may not be a bedrock deployment's (None: it may; a missing one is the
    region's own endpoint, which botocore builds)."""
    if base_url is None:
        return None
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return f"{base_url!r} is not a valid URL"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return f"{base_url!r}: a Bedrock endpoint has no path or query"
    if not signable(base_url, listed):
        return f"{base_url!r} is not an AWS Bedrock runtime endpoint: {_USAGE}"
    return None
