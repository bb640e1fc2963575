"""One cold start of a *built* scheduled job function, run by a bare ``python3.12 -I -S -B``.

    python3.12 -I -S -B bench/job_child.py FUNCTION_DIR LAYER_DIR EVENT.json OUT.json

As ``built_child`` does for the proxy: only the built function and its layer
on ``sys.path``, bytecode as shipped. Times the import, the first invocation
(it builds the clients) and a second one (the job runs every minute, so its
environment is usually warm), this process's CPU for each, and writes them
with the answers and the process's memory to OUT.json. Standard library only.
"""

import time

STARTED = time.monotonic()  # before any import of note

import json  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402


class Context:
    function_name = "edgeproxy-bench-job"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:edgeproxy-bench-job"
    aws_request_id = "00000000-0000-0000-0000-000000000002"


def _memory() -> dict[str, float]:
    out = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                out[name] = int(value.split()[0]) / 1024
    return out


def _invoke(handler: Any, event: dict[str, Any]) -> tuple[Any, float, float]:
    """The answer, the wall seconds and the CPU seconds of one invocation."""
    started, cpu_before = time.monotonic(), time.process_time()
    answer = handler(event, Context())
    return answer, time.monotonic() - started, time.process_time() - cpu_before


def main() -> None:
    function_dir, layer_dir, event_path, out_path = sys.argv[1:]
    sys.path[:0] = [function_dir, layer_dir]
    cpu_started = time.process_time()
    import app  # the built function's module

    imported = time.monotonic()
    import_cpu = time.process_time() - cpu_started
    memory_after_import = _memory()
    with open(event_path) as source:
        event = json.load(source)
    first, first_wall, first_cpu = _invoke(app.handler, event)
    warm, warm_wall, warm_cpu = _invoke(app.handler, event)
    result = {
        "started": STARTED,
        "imported": imported,
        "import_cpu_s": import_cpu,
        "first_invocation_s": first_wall,
        "first_invocation_cpu_s": first_cpu,
        "warm_invocation_s": warm_wall,
        "warm_invocation_cpu_s": warm_cpu,
        "answers": [first, warm],
        "memory_after_import_mib": memory_after_import,
        "memory_after_events_mib": _memory(),
        "modules": len(sys.modules),
    }
    app.handler.close()
    with open(out_path, "w") as out:
        json.dump(result, out)


main()
