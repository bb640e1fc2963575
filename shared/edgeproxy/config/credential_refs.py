"""Which credential references an upstream may name.

A reference is resolved by the gateway and sent to the deployment's host,
so it must not be able to name any secret of the gateway's own:

    env:EDGEPROXY_CRED_<NAME>     an environment variable under ENV_PREFIX only
    ssm:/edgeproxy/<path>         an SSM parameter under the stack's prefix
    secretsmanager:edgeproxy/<n>  a Secrets Manager secret under the stack's prefix

(the SSM and Secrets Manager prefixes are the ones template.yaml grants the
functions). The bootstrap admin key's reference and the process's AWS
credentials are refused by the resolver itself (``service.credentials``),
which knows them: by reference and by value.
"""

from __future__ import annotations

ENV_PREFIX = "EDGEPROXY_CRED_"
SSM_PREFIX = "/edgeproxy/"
SECRETS_PREFIX = "edgeproxy/"
_RULES = {
    "env": (ENV_PREFIX, "an environment variable named {prefix}*"),
    "ssm": (SSM_PREFIX, "an SSM parameter under {prefix}"),
    "secretsmanager": (SECRETS_PREFIX, "a Secrets Manager secret named {prefix}*"),
}
_USAGE = "env:EDGEPROXY_CRED_<NAME>, ssm:/edgeproxy/<path> or secretsmanager:edgeproxy/<name>"


def reference_problem(reference: str) -> str | None:
    """Why ``reference`` may not be an upstream credential (None: it may).

    >>> reference_problem("env:EDGEPROXY_CRED_OPENAI") is None
    True
    """
    if not reference.isprintable() or any(char.isspace() for char in reference):
        # A newline or other control character would forge log lines wherever it is shown.
        return f"{reference!r} holds a control or space character; a reference has none"
    scheme, sep, name = reference.partition(":")
    rule = _RULES.get(scheme)
    if not sep or rule is None:
        return f"{reference!r} is not a credential reference ({_USAGE})"
    prefix, what = rule
    if not name.startswith(prefix) or len(name) == len(prefix) or ".." in name:
        return f"{reference!r} is not {what.format(prefix=prefix)}; use {_USAGE}"
    return None
