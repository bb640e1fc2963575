"""Lambda entry point of the scheduled health job (EventBridge, every minute)."""

from edgeproxy.jobs.entry import build_health_handler

handler = build_health_handler()
