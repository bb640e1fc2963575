"""The hand-built AWS client: connections, SigV4, the JSON protocol, endpoints, sessions.

It knows AWS, not edgeproxy: nothing here reads or writes an item of the
store (``state/`` imports this package, never the reverse).
"""
