"""A deployment's price basis and its comparable price, for ``price-based`` ordering.

000: prices compare only within one billing basis. A deployment is billed per
token (input plus output, or input only as embeddings are), per search unit
(``search_unit_cents``, as reranking is), or declares nothing usable: no
price, or both a token and a search-unit price (which of the two a request
costs depends on the request, so neither number ranks it).
"""

from __future__ import annotations

from enum import StrEnum

from edgeproxy.config.deployment import Deployment


class PriceBasis(StrEnum):
    TOKENS = "tokens"  # input and output per million tokens
    INPUT_TOKENS = "input_tokens"  # input per million tokens only (embeddings)
    SEARCH_UNITS = "search_units"  # cents per search unit
    UNKNOWN = "unknown"  # no usable price, or both bases at once


def price_basis(dep: Deployment) -> PriceBasis:
    """What ``dep``'s declared prices let it be compared on.

    >>> price_basis(Deployment.model_validate({"id": "r", "model": "m", "provider": "openai_compat",
    ...     "base_url": "http://r", "upstream_model": "m", "search_unit_cents": 0.2}))
    <PriceBasis.SEARCH_UNITS: 'search_units'>
    """
    tokens = dep.input_price_per_mtok is not None or dep.output_price_per_mtok is not None
    units = dep.search_unit_cents is not None
    if tokens and units:
        return PriceBasis.UNKNOWN
    if units:
        return PriceBasis.SEARCH_UNITS
    if dep.input_price_per_mtok is None:  # an output price alone says nothing of the prompt's
        return PriceBasis.UNKNOWN
    return PriceBasis.INPUT_TOKENS if dep.output_price_per_mtok is None else PriceBasis.TOKENS


def comparable_price(dep: Deployment) -> float:
    """``dep``'s price in its own basis (compare only deployments of one basis)."""
    if dep.search_unit_cents is not None:
        return dep.search_unit_cents
    return (dep.input_price_per_mtok or 0.0) + (dep.output_price_per_mtok or 0.0)
