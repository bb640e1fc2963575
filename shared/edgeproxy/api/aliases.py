"""The API's routes without their ``/v1`` prefix, as LiteLLM serves them.

A client whose base URL lacks ``/v1`` (``OpenAI(base_url="http://host:8080")``,
as many LiteLLM setups are written) calls ``/chat/completions``; each alias
is the same endpoint as its ``/v1`` form (same guard, same error surface),
not a redirect, so a POST body is never lost to a 30x.

    /chat/completions  /completions  /embeddings  /responses
    /messages  /messages/count_tokens  /models  /models/{model}

The admins' ``/v1/models/{model}/deployments`` keeps its one path.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute, Route

PREFIX = "/v1"
_ONLY_VERSIONED = frozenset({"/v1/models/{model:path}/deployments"})


def unversioned(routes: Sequence[BaseRoute]) -> list[Route]:
    """A route at the path without ``/v1`` for each public ``/v1/...`` route, in order."""
    out: list[Route] = []
    for route in routes:
        if not isinstance(route, Route) or not route.path.startswith(PREFIX + "/"):
            continue
        if route.path in _ONLY_VERSIONED:
            continue
        methods = sorted(route.methods - {"HEAD"}) if route.methods else None
        out.append(Route(route.path[len(PREFIX) :], route.endpoint, methods=methods))
    return out
