"""Where a JSON service's calls go: its endpoint, as botocore would resolve it.

``endpoint_url`` follows botocore's order for the settings this module reads:
``AWS_ENDPOINT_URL_<SERVICE>``, then ``AWS_ENDPOINT_URL``, then
``https://<signing name>.<region>.amazonaws.com`` (``.com.cn`` in China).
Where botocore would consult more (the shared config file's endpoint settings,
FIPS or dual-stack endpoints, the isolated partitions) it answers None and the
caller uses botocore's own client instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from edgeproxy.aws.client import Protocol

# Settings that make botocore choose an endpoint by rules this module does not model.
UNMODELLED_SETTINGS = (
    "AWS_USE_FIPS_ENDPOINT",
    "AWS_USE_DUALSTACK_ENDPOINT",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
)
CONFIG_ENDPOINT_KEYS = (
    "endpoint_url",
    "use_fips_endpoint",
    "use_dualstack_endpoint",
    "ignore_configured_endpoint_urls",
)
ISOLATED_REGIONS = ("us-iso", "eu-iso")  # partitions with their own DNS suffixes


def default_endpoint(protocol: Protocol, region: str) -> str:
    """The service's public endpoint in ``region`` (AWS, AWS GovCloud and AWS China)."""
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://{protocol.signing_name}.{region}.{suffix}"


def endpoint_url(protocol: Protocol, region: str, environ: Mapping[str, str]) -> str | None:
    """Where botocore would send ``protocol``'s calls, or None where it would read more than
    the environment's endpoint variables (then use botocore's client).

    >>> from edgeproxy.aws.secrets import SSM
    >>> endpoint_url(SSM, "eu-west-1", {"AWS_CONFIG_FILE": "/nonexistent"})
    'https://ssm.eu-west-1.amazonaws.com'
    >>> endpoint_url(SSM, "eu-west-1", {"AWS_ENDPOINT_URL": "http://127.0.0.1:5000"})
    'http://127.0.0.1:5000'
    """
    if any(environ.get(name, "").strip() for name in UNMODELLED_SETTINGS):
        return None
    own = environ.get(f"AWS_ENDPOINT_URL_{protocol.endpoint_variable}", "").strip()
    if own:
        return own
    if _config_sets_endpoints(environ) or region.startswith(ISOLATED_REGIONS):
        return None
    return environ.get("AWS_ENDPOINT_URL", "").strip() or default_endpoint(protocol, region)


def _config_sets_endpoints(environ: Mapping[str, str]) -> bool:
    """Whether the shared config file (botocore's ``AWS_CONFIG_FILE``) may set an endpoint."""
    # os.path's expanduser: where no home is known (a Lambda sandbox's user) it leaves "~".
    path = os.path.expanduser(environ.get("AWS_CONFIG_FILE") or "~/.aws/config")
    try:
        text = Path(path).read_text(errors="replace").lower()
    except OSError:  # none (as on Lambda), or unreadable: botocore reads nothing either
        return False
    return any(key in text for key in CONFIG_ENDPOINT_KEYS)
