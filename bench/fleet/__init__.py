"""The fleet simulator (``make simulate``): many one-request-at-a-time instances on one table.

``capacity``: a DynamoDB capacity model (per-partition read and write units,
the 400 KB item limit, split for heat); ``engine``: virtual instances on it in
virtual time; ``moto_fleet``: real instances on the embedded store in real
time; ``team_load``: a hot team's minute bucket with and without
``counter_shards``; ``prefill``: 001's prefill rule on and off over prefill-bound replicas
in virtual time; ``report``: the Markdown report and its plots; ``run``: the command.
"""
