"""Sharded counters: how one limit splits over a deployment's shard items (pure arithmetic)."""
