"""Lambda entry point of the scheduled health job (EventBridge, every minute)."""

from edgeproxy.entrypoint import lean_init

with lean_init():  # what the cold start need not pay (entrypoint.py)
    from edgeproxy.jobs.entry import build_health_handler

    handler = build_health_handler()
