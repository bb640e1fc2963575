"""Ordering strategies: the registry, the rankers and the catalogue users read."""
