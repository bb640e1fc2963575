"""Shared fixtures: the embedded DynamoDB, loopback mock upstreams, running gateways."""

pytest_plugins = ["tests.fixtures.dynamo", "tests.fixtures.upstream", "tests.fixtures.gateway"]
