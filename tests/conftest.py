"""Shared fixtures: the embedded DynamoDB and loopback mock upstreams."""

pytest_plugins = ["tests.fixtures.dynamo", "tests.fixtures.upstream"]
