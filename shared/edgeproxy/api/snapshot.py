"""SnapStart's runtime hooks for the proxy's Lambda handler.

With SnapStart (the template's ``SnapStart=on``) Lambda runs the handler
module's init once, when a version is published, snapshots the process, and
resumes every new execution environment of that version from the snapshot.
Two hooks, registered through ``snapshot_restore_py`` (part of Lambda's
Python runtime; absent elsewhere, and then nothing is registered):

- before the snapshot, :func:`prepare` imports what the first request would
  import otherwise, so each restore skips it: aioboto3 when the first request
  needs a real AWS session (``aws.session.DeferredSession``: credentials not
  in the environment, which is how SnapStart hands them over, or an
  ``ssm:``/``secretsmanager:`` admin key reference whose endpoint only
  botocore knows, ``aws/endpoints.endpoint_url``), and the CA bundle's path
  (``certifi.where()``, which imports importlib's resource readers). It opens
  no connection, builds no client or TLS context, starts no task and
  resolves no credential: whatever is in the snapshot is shared by every
  environment restored from it.
- after a restore, :func:`restored` reseeds the ``random`` module (its state
  is in the snapshot, so every restore would draw the same numbers: retry
  jitter in the store client, OpenTelemetry's trace and span ids, the
  libraries' choices) and drops a gateway built
  before the snapshot, with its connection pools, cached credentials and
  ``random.Random``. Normally there is none: the gateway is built by the
  first invocation, which comes after the restore and seeds its own
  generator from the operating system.

Bedrock's client and yaml stay deferred: whether a process needs them is in
the stored configuration, which init does not read.
"""

from __future__ import annotations

import importlib
import logging
import random
import sys
from collections.abc import Callable, Mapping

import certifi

from edgeproxy.aws.endpoints import endpoint_url
from edgeproxy.aws.secrets import SECRETS_MANAGER, SSM
from edgeproxy.aws.session import environment_credentials
from edgeproxy.settings import Settings

logger = logging.getLogger(__name__)

# Credential references resolved through an AWS client (service/credentials.py).
AWS_REFERENCES = {"ssm:": SSM, "secretsmanager:": SECRETS_MANAGER}


def first_request_imports(environ: Mapping[str, str], admin_key_ref: str | None) -> list[str]:
    """The modules the first request imports that init did not.

    >>> first_request_imports({"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}, None)
    []
    >>> first_request_imports({}, None)  # SnapStart: credentials from the container endpoint
    ['aioboto3']
    """
    if environment_credentials(environ) is None:
        return ["aioboto3"]
    reference = (admin_key_ref or "").strip()
    for prefix, protocol in AWS_REFERENCES.items():
        if reference.startswith(prefix):
            region = Settings.from_env(environ).region
            # The lean client reads it, unless botocore alone knows the endpoint.
            return ["aioboto3"] if endpoint_url(protocol, region, environ) is None else []
    return []


def prepare(environ: Mapping[str, str], admin_key_ref: str | None) -> list[str]:
    """Before the snapshot: import :func:`first_request_imports`; the ones imported now."""
    imported = []
    for name in first_request_imports(environ, admin_key_ref):
        if name not in sys.modules:
            importlib.import_module(name)
            imported.append(name)
    certifi.where()  # the upstream transport's first TLS context asks for it (a path, cached)
    return imported


def restored(close: Callable[[], None]) -> None:
    """After a restore: a new seed for ``random``; ``close`` drops a gateway built before."""
    random.seed()  # from os.urandom, which the restored kernel reseeds
    close()


def register(settings: Settings, close: Callable[[], None]) -> bool:
    """Register both hooks with Lambda's runtime; False where it offers none (not on Lambda).

    ``close`` closes the handler's gateway if one was built (``Entrypoint.close``).

    >>> register(Settings.from_env(), lambda: None)  # in build_handler  # doctest: +SKIP
    True
    """
    try:
        import snapshot_restore_py
    except ImportError:
        return False
    snapshot_restore_py.register_before_snapshot(prepare, settings.environ, settings.admin_key_ref)
    snapshot_restore_py.register_after_restore(restored, close)
    logger.debug("SnapStart hooks registered")
    return True
