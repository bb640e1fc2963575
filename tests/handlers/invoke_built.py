"""Run by a bare python3.12 (``-I -S``: no site-packages, no project on the path).

    python3.12 -I -S invoke_built.py FUNCTION_DIR LAYER_DIR EVENT.json [EVENT.json ...]

Imports ``app.handler`` from the built function with only the function and
its layer on ``sys.path``, as Lambda does, invokes it with each event from one
thread that owns the event loop, and prints the answers as one JSON object
keyed by event file name.
"""

import asyncio
import json
import sys
from pathlib import Path


class Context:
    function_name = "edgeproxy-built"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:edgeproxy-built"
    aws_request_id = "00000000-0000-0000-0000-000000000001"


def main() -> None:
    function_dir, layer_dir, *events = sys.argv[1:]
    sys.path[:0] = [function_dir, layer_dir]
    asyncio.set_event_loop(asyncio.new_event_loop())
    import app  # the built function's module

    answers = {}
    try:
        for path in events:
            event = json.loads(Path(path).read_text())
            answers[Path(path).name] = app.handler(event, Context())
    finally:
        app.handler.close()
    loaded = sorted(
        m.__file__
        for name, m in sys.modules.items()
        if name != "__main__" and getattr(m, "__file__", None)
    )
    print("ANSWERS " + json.dumps({"answers": answers, "modules": loaded}))


main()
