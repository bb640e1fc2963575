"""Lambda entry point of the scheduled quota refresh (EventBridge, every minute by default)."""

from edgeproxy.entrypoint import lean_init

with lean_init():  # what the cold start need not pay (entrypoint.py)
    from edgeproxy.jobs.entry import build_quota_handler

    handler = build_quota_handler()
