"""001's prefill-aware extras: the prefill load signal, large requests, the affinity ceiling, hints."""
