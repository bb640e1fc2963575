"""The mock upstreams in their own process: two ``MockServer``s on one event loop.

Run as ``python -m bench.upstream_server API_KEY``: prints ``upstream on PORT PORT``
once both listen, then serves until stdin closes.

One loop, not a thread per mock (as ``MockUpstream`` would do): the two ports
then never contend for the GIL with each other, and the process costs one
core at most. The mocks keep a request log for tests; here it is emptied
every second so a long run does not grow the process.
"""

from __future__ import annotations

import asyncio
import sys

from edgeproxy_dev.mock_server import MockServer

LOG_CLEAR_INTERVAL_S = 1.0


async def serve(api_key: str) -> None:
    """Serve two mocks on free loopback ports until stdin reaches end of file."""
    servers = [MockServer(name, api_key=api_key) for name in ("mock-a", "mock-b")]
    for server in servers:
        await server.start("127.0.0.1", 0)
    print("upstream on " + " ".join(str(s.port) for s in servers), flush=True)
    loop = asyncio.get_running_loop()
    stdin_closed = loop.run_in_executor(None, sys.stdin.read)
    try:
        while not stdin_closed.done():
            for server in servers:
                server.clear_requests()
            await asyncio.wait({stdin_closed}, timeout=LOG_CLEAR_INTERVAL_S)
    finally:
        for server in servers:
            await server.close()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
