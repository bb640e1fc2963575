"""One cold start of the *built* proxy function, run by a bare ``python3.12 -I -S -B``.

    python3.12 -I -S -B bench/built_child.py FUNCTION_DIR LAYER_DIR EVENT.json OUT.json WARM [vary]

Like Lambda: only the built function and its layer on ``sys.path`` (no venv,
no project), bytecode as the build shipped it (``-B``: none written), one
thread owning the event loop. Times import, the first event and ``WARM`` warm
events (wall and this process's CPU each), and writes them with the process's
memory to OUT.json. Standard library only: nothing else is importable here.
``vary``: each warm event's last message gets a suffix of its own (a new
prompt each time: the response cache's misses, ``bench/built_cache.py``).
The ``x-edgeproxy-cache`` answer of every warm event is counted in ``cache``.
"""

import time

STARTED = time.monotonic()  # before any import of note

import asyncio  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402


class Context:
    function_name = "edgeproxy-bench"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:edgeproxy-bench"
    aws_request_id = "00000000-0000-0000-0000-000000000000"


def _memory() -> dict[str, float]:
    out = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                out[name] = int(value.split()[0]) / 1024
    return out


def _varied(event: dict, index: int) -> dict:
    body = json.loads(event["body"])
    body["messages"][-1]["content"] = f"{body['messages'][-1]['content']} ({STARTED} {index})"
    return {**event, "body": json.dumps(body)}


def main() -> None:
    function_dir, layer_dir, event_path, out_path, warm_events, *mode = sys.argv[1:]
    vary = mode == ["vary"]
    sys.path[:0] = [function_dir, layer_dir]
    asyncio.set_event_loop(asyncio.new_event_loop())
    cpu_started = time.process_time()
    import app  # the built function's module

    imported = time.monotonic()
    cpu_imported = time.process_time()
    memory_after_import = _memory()
    with open(event_path) as source:
        event = json.load(source)
    answer = app.handler(event, Context())
    first = time.monotonic()
    cpu_first = time.process_time()
    if answer.get("statusCode") != 200:
        raise SystemExit(f"the first event answered {answer.get('statusCode')}: {answer}")
    wall, cpu = [], []
    cache: dict[str, int] = {}
    warm_started = time.monotonic()
    for index in range(int(warm_events)):
        if vary:
            event = _varied(event, index)
        started, cpu_before = time.monotonic(), time.process_time()
        answer = app.handler(event, Context())
        wall.append(time.monotonic() - started)
        cpu.append(time.process_time() - cpu_before)
        if answer.get("statusCode") != 200:
            raise SystemExit(f"a warm event answered {answer.get('statusCode')}")
        said = (answer.get("headers") or {}).get("x-edgeproxy-cache", "none")
        cache[said] = cache.get(said, 0) + 1
    warm_done = time.monotonic()
    result = {
        "started": STARTED,
        "imported": imported,
        "first_event_done": first,
        "import_cpu_s": cpu_imported - cpu_started,
        "first_event_cpu_s": cpu_first - cpu_imported,
        "warm_wall_s": sorted(wall)[len(wall) // 2],
        "warm_cpu_s": sorted(cpu)[len(cpu) // 2],
        "warm_cpu_mean_s": sum(cpu) / len(cpu),
        "warm_started": warm_started,
        "warm_done": warm_done,
        "cache": cache,
        "memory_after_import_mib": memory_after_import,
        "memory_after_events_mib": _memory(),
        "modules": sorted(sys.modules),
    }
    app.handler.close()
    with open(out_path, "w") as out:
        json.dump(result, out)


main()
