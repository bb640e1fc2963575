"""``gateway.request_log``: how long the request log and its reports keep, and what.

The log never holds a prompt or an answer unless its pool is listed in
``bodies``; then both are kept redacted of credentials and cut at
``body_bytes`` (UTF-8 bytes of their JSON).
"""

from __future__ import annotations

from pydantic import Field

from edgeproxy.config.base import Positive, Strict


class RequestLogSettings(Strict):
    """The request log's switches (``gateway.request_log`` in the YAML).

    ``retention_days``: a record's DynamoDB TTL; ``report_days``: the hourly
    aggregates' (what ``/admin/usage`` can look back over); ``bodies``: the
    pools (public models) whose prompts and answers are kept.
    """

    enabled: bool = True
    retention_days: Positive = 30
    report_days: Positive = 400
    bodies: list[str] = Field(default_factory=list)
    body_bytes: Positive = 4096
