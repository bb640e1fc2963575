"""``POST /admin/route/explain``: which deployment a request would get now, and why.

The body names the request (its JSON body and its path or operation) and
the caller (a client key's id, or an affinity identity as stored). The
request body is parsed by its surface's codec, as the proxy would parse it,
then explained by ``service.explainer``: the router's read and core,
with no upstream call and no state written. ``seed`` makes a random
strategy's draw repeatable. ``levels`` and ``refused_by``: the limits of the
key's team, organization and end user with their counters as read, and the
refusal (naming the level and its id) the request would get from them.
"""

from __future__ import annotations

import random
from typing import Annotated, Any, Self

from pydantic import Field, model_validator
from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body
from edgeproxy.api.codec import Codec
from edgeproxy.api.surfaces.messages import MESSAGES
from edgeproxy.api.surfaces.openai import CHAT, COMPLETIONS, EMBEDDINGS
from edgeproxy.api.surfaces.responses import RESPONSES
from edgeproxy.config.base import Strict
from edgeproxy.config.roles import Role
from edgeproxy.errors import RequestError
from edgeproxy.routing.judge.end_user import end_user_of
from edgeproxy.service.admin.bindings import looks_like_caller_id, resolve_caller
from edgeproxy.service.admin.config_edit import checked
from edgeproxy.service.admin.redaction import redact_caller
from edgeproxy.service.explainer import explain, new_run, subject
from edgeproxy.service.request import ProxyRequest

# By operation name and by path, as the proxy's routes name them (api/app.py).
_CODECS: dict[str, Codec] = {
    "chat": CHAT,
    "completions": COMPLETIONS,
    "embeddings": EMBEDDINGS,
    "messages": MESSAGES,
    "responses": RESPONSES,
}
_PATHS = {
    "/v1/chat/completions": "chat",
    "/v1/completions": "completions",
    "/v1/embeddings": "embeddings",
    "/v1/messages": "messages",
    "/v1/responses": "responses",
}
Text = Annotated[str, Field(min_length=1, max_length=500)]


class Explain(Strict):
    """A request to explain: its ``body`` with its ``path`` or ``operation``, and its caller.

    ``key_id``: a client key's id (its role and identity); ``caller``: an
    affinity identity (``key:<sha256>``, ``grant:<id>``, ``ip:<bucket>``) or an IP.
    ``role`` overrides the caller's role. ``seed``: the draw of a random strategy.
    ``end_user``: the end user the request names (as ``x-edgeproxy-end-user`` would;
    else the body's ``user`` or ``metadata.user_id``).
    """

    body: dict[str, Any]
    path: Text | None = None
    operation: Text | None = None
    key_id: Text | None = None
    caller: Text | None = None
    role: Role | None = None
    seed: int | None = None
    end_user: Text | None = None

    @model_validator(mode="after")
    def _one_each(self) -> Self:
        if (self.path is None) == (self.operation is None):
            raise ValueError("give exactly one of `path` and `operation`")
        if (self.key_id is None) == (self.caller is None):
            raise ValueError("give exactly one of `key_id` and `caller`")
        return self

    def codec(self) -> Codec:
        name = self.operation or _PATHS.get(self.path or "", "")
        codec = _CODECS.get(name)
        if codec is None:
            where = "operation" if self.operation else "path"
            known = ", ".join(_CODECS if self.operation else _PATHS)
            raise RequestError(f"`{where}` must be one of: {known}.", param=where)
        return codec


async def explain_route(call: AdminCall) -> Response:
    """Explain the routing of one request for one caller, as of now."""
    order = checked(Explain, await json_body(call))
    assert isinstance(order, Explain)
    codec = order.codec()
    parsed = codec.parse(order.body)
    caller = order.caller
    if caller is not None:
        if not looks_like_caller_id(caller):
            raise RequestError("`caller` must be a caller id or an IP address.", param="caller")
        caller = resolve_caller(caller)
    gateway = call.gateway
    who = await subject(gateway.store, key_id=order.key_id, caller=caller, role=order.role)
    req = ProxyRequest(
        operation=codec.operation,
        model=parsed.model,
        body=parsed.body,
        caller=who.caller,
        request_id="explain",
        stream=parsed.stream,
        modalities=parsed.modalities,
        surface=codec.surface,
        role=who.role,
        key=who.key,
        chat=parsed.chat,
        end_user=end_user_of(order.end_user, order.body, codec.surface),
    )
    now = gateway.now()
    run = new_run(req, call.config, now, gateway.calibrations.view(req.protocol))
    report = await explain(gateway.store, call.config, run, now=now, rng=random.Random(order.seed))
    # The team, organization and end-user limits the request would meet (read, not charged).
    report.update(await gateway.levels.explain(req, call.config, gateway.calibrations, now))
    report["caller"] = redact_caller(who.caller)
    report["key_id"] = who.key.id if who.key else None
    return JSONResponse(report)


ROUTES = [
    AdminRoute(
        "POST",
        "/admin/route/explain",
        explain_route,
        "Which deployment a request would get now, and why not the others",
        "routing",
        body=Explain,
    ),
]
