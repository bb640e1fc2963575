"""One built proxy process for ``bench.instructions``, run under valgrind by a bare ``python3.12``.

    python3.12 -I -S -B bench/instructions_child.py FUNCTION_DIR LAYER_DIR EVENT.json OUT.json EVENTS

Imports ``app`` (unless ``EVENTS`` is ``none``: the bare interpreter) and
invokes its handler with the event ``EVENTS`` times (the first builds the
clients), then writes the modules loaded and the answers' status to OUT.json.
No timing: valgrind counts the instructions, which the machine's load does
not change. Standard library only, like ``built_child``.
"""

import asyncio
import json
import sys


class Context:
    function_name = "edgeproxy-bench"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:edgeproxy-bench"
    aws_request_id = "00000000-0000-0000-0000-000000000000"


def main() -> None:
    function_dir, layer_dir, event_path, out_path, events = sys.argv[1:]
    sys.path[:0] = [function_dir, layer_dir]
    if events == "none":
        with open(out_path, "w") as out:
            json.dump({"modules": sorted(sys.modules), "statuses": []}, out)
        return
    asyncio.set_event_loop(asyncio.new_event_loop())
    import app  # the built function's module

    with open(event_path) as source:
        event = json.load(source)
    answers = [app.handler(event, Context()) for _ in range(int(events))]
    statuses = [a.get("statusCode", 200) if isinstance(a, dict) else 200 for a in answers]
    if any(status != 200 for status in statuses):
        raise SystemExit(f"an invocation answered {answers[-1]}")
    if answers:
        app.handler.close()
    with open(out_path, "w") as out:
        json.dump({"modules": sorted(sys.modules), "statuses": statuses}, out)


main()
