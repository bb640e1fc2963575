"""Process settings, read once from the environment (the only module that does).

| variable | default | meaning |
|---|---|---|
| ``EDGEPROXY_TABLE`` | ``edgeproxy`` | the state table's name |
| ``EDGEPROXY_TABLE_SCHEMA`` | ``pk,sk,expires_at`` | partition key, sort key, TTL attribute (set by template.yaml) |
| ``EDGEPROXY_DYNAMODB_ENDPOINT`` | unset (AWS) | any DynamoDB-protocol endpoint, e.g. the embedded one |
| ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` | ``us-east-1`` | region of the table and of SSM / Secrets Manager |
| ``EDGEPROXY_CONFIG_TTL_SECONDS`` | ``10`` | how long a handler caches the configuration |
| ``EDGEPROXY_STORE_TIMEOUT_SECONDS`` | ``2`` | longest one DynamoDB call may take, retries included |
| ``EDGEPROXY_TRUST_FORWARDED_FOR`` | ``false`` | take the caller IP from ``X-Forwarded-For`` (only behind a trusted proxy) |
| ``EDGEPROXY_LOG_LEVEL`` | ``INFO`` | log level |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field


def _bool(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a process needs from its environment."""

    table: str = "edgeproxy"
    table_schema: str = "pk,sk,expires_at"
    dynamodb_endpoint: str | None = None
    region: str = "us-east-1"
    config_ttl_seconds: float = 10.0
    store_timeout_seconds: float = 2.0
    trust_forwarded_for: bool = False
    log_level: str = "INFO"
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the settings; ``environ`` defaults to ``os.environ``.

        The environment is kept (not shown in reprs) so that ``env:NAME``
        credential references resolve without another module reading it.
        """
        env = dict(os.environ if environ is None else environ)
        return cls(
            table=env.get("EDGEPROXY_TABLE", "edgeproxy"),
            table_schema=env.get("EDGEPROXY_TABLE_SCHEMA", "pk,sk,expires_at"),
            dynamodb_endpoint=env.get("EDGEPROXY_DYNAMODB_ENDPOINT") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            config_ttl_seconds=float(env.get("EDGEPROXY_CONFIG_TTL_SECONDS", "10")),
            store_timeout_seconds=float(env.get("EDGEPROXY_STORE_TIMEOUT_SECONDS", "2")),
            trust_forwarded_for=_bool(env.get("EDGEPROXY_TRUST_FORWARDED_FOR")),
            log_level=env.get("EDGEPROXY_LOG_LEVEL", "INFO").upper(),
            environ=env,
        )
