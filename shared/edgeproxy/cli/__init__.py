"""The ``edgeproxy`` command: one module a command group, ``command`` the entry point."""

from edgeproxy.cli.command import main

__all__ = ["main"]
