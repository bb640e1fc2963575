"""Shared fixtures: the clock, the embedded DynamoDB, mock upstreams, running gateways."""

pytest_plugins = [
    "tests.fixtures.secrets",  # first: the gateway fixtures import it
    "tests.fixtures.clock",
    "tests.fixtures.dynamo",
    "tests.fixtures.table",
    "tests.fixtures.upstream",
    "tests.fixtures.gateway",
]
