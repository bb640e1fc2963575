"""One SnapStart publish and restores of the proxy handler, as processes.

    python tests/handlers/restore_child.py APP.py EVENT.json OUT_DIR

Imports the handler module (its init, as Lambda runs it when it publishes a
version), then forks children, one after another, each an environment
restored from the parent's state:

- ``control<N>.json``: two restores without any hook, forked before the
  hooks run; they only draw from ``random`` (what a restore would see if the
  hooks did nothing);
- ``restore<N>.json``: the before-snapshot hooks the module registered with
  ``snapshot_restore_py`` run in the parent (reverse order of registration,
  as Lambda runs them), then each of two children runs the after-restore
  hooks (in order), draws from ``random`` and serves EVENT through the
  handler.

The parent writes ``snapshot.json``. Two things a fork does that a restore
does not are undone: ``random`` reseeds itself in a forked child
(``os.register_at_fork``), so each child first takes back the parent's state;
and a fork shares the parent's event loop selector (a restore has its own
microVM), so the children run one at a time.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import random
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Context:
    function_name = "edgeproxy-snapstart"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:edgeproxy-snapstart"
    aws_request_id = "00000000-0000-0000-0000-000000000000"


def _restore(app: Any, event: dict[str, Any] | None) -> dict[str, Any]:
    """A restored environment: the after-restore hooks, draws, then ``event`` if given."""
    import snapshot_restore_py

    report: dict[str, Any] = {}
    if event is not None:
        for function, args, kwargs in snapshot_restore_py.get_after_restore():
            function(*args, **kwargs)
    report["draws"] = [random.random() for _ in range(4)]
    if event is not None:
        before = set(sys.modules)
        answer = app.handler(event, Context())
        report["status"] = answer["statusCode"]
        report["imported_by_first_event"] = sorted(set(sys.modules) - before)
        app.handler.close()
    return report


def _in_child(run: Callable[[], dict[str, Any]], out: Path) -> bool:
    """``run`` in a forked child that writes its report to ``out``; whether it succeeded."""
    sys.stdout.flush()
    sys.stderr.flush()
    state = random.getstate()
    pid = os.fork()
    if pid == 0:
        random.setstate(state)  # a restore resumes memory as it was: no at-fork reseed
        code = 1
        try:
            out.write_text(json.dumps(run()))
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def main() -> int:
    app_path, event_path, out_dir = (Path(a) for a in sys.argv[1:4])
    import snapshot_restore_py  # importable, as on Lambda's Python runtime

    asyncio.set_event_loop(asyncio.new_event_loop())  # Lambda's runtime thread, as tests do
    spec = importlib.util.spec_from_file_location("app", app_path)
    assert spec is not None
    assert spec.loader is not None
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)  # init: builds the handler, registers the hooks
    event = json.loads(event_path.read_text())
    for index in range(2):
        if not _in_child(lambda: _restore(app, None), out_dir / f"control{index}.json"):
            return 1
    before = set(sys.modules)
    registered = snapshot_restore_py.get_before_snapshot()
    for function, args, kwargs in reversed(registered):
        function(*args, **kwargs)
    snapshot = {
        "before_snapshot_hooks": len(registered),
        "after_restore_hooks": len(snapshot_restore_py.get_after_restore()),
        "imported_by_hooks": sorted(set(sys.modules) - before),
    }
    (out_dir / "snapshot.json").write_text(json.dumps(snapshot))
    for index in range(2):
        if not _in_child(lambda: _restore(app, event), out_dir / f"restore{index}.json"):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
