"""The state table's attribute names: partition key, sort key, TTL attribute.

In Lambda the schema arrives as the ``EDGEPROXY_TABLE_SCHEMA`` environment
value (``"pk,sk,expires_at"``) that the template passes to every function;
tests and local runs read the ``AWS::DynamoDB::Table`` resource of
``template.yaml`` itself (``edgeproxy_dev.template``), so a table built for a
test has exactly the keys the deployed one has.

    >>> schema = TableSchema.from_env_value("pk,sk,expires_at")
    >>> (schema.pk, schema.sk, schema.ttl)
    ('pk', 'sk', 'expires_at')
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TableSchema:
    """Attribute names of the state table: partition key, sort key, TTL attribute."""

    pk: str
    sk: str
    ttl: str

    @classmethod
    def from_env_value(cls, value: str) -> TableSchema:
        """Parse ``"pk,sk,ttl"`` (the template's ``EDGEPROXY_TABLE_SCHEMA``)."""
        parts = [part.strip() for part in value.split(",")]
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"table schema must be 'pk,sk,ttl', got {value!r}")
        return cls(pk=parts[0], sk=parts[1], ttl=parts[2])
