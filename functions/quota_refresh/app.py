"""Lambda entry point of the scheduled quota refresh (EventBridge, every minute by default)."""

from edgeproxy.jobs.entry import build_quota_handler

handler = build_quota_handler()
