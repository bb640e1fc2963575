"""The edgeproxy benchmark: ``make bench`` (full) and ``make bench-smoke`` (CI)."""
