"""The ``table`` fixture: a synchronous view of the state table this test's gateways share."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from edgeproxy.state.schema import TableSchema
from edgeproxy_dev.dynamo_server import client_kwargs
from tests.integration.sticky.helpers import TableView


@pytest.fixture
def table(
    dynamo_endpoint: str, gateway_table: str, table_schema: TableSchema
) -> Iterator[TableView]:
    """The table shared by this test's gateways."""
    client = boto3.client("dynamodb", **client_kwargs(dynamo_endpoint))
    try:
        yield TableView(client, gateway_table, table_schema)
    finally:
        client.close()
