"""Upstream calls: the httpx client, provider adapters and SSE parsing.

client.py            UpstreamClient.send / open_stream, make_http_client
call.py              UpstreamCall, UpstreamResponse, StreamEvent, Usage
stream.py            UpstreamStream (idle deadline, completeness)
errors.py            the one translation of foreign errors into UpstreamFault
headers.py           Retry-After and rate-limit headers
openai.py            OpenAI / OpenAI-compatible adapter
anthropic*.py        Anthropic Messages adapter and stream translation
sse.py               incremental Server-Sent Events parser
"""

from edgeproxy.errors import UpstreamFault
from edgeproxy.upstream.call import StreamEvent, UpstreamCall, UpstreamResponse, Usage
from edgeproxy.upstream.client import UpstreamClient, make_http_client
from edgeproxy.upstream.headers import RateLimitInfo
from edgeproxy.upstream.stream import UpstreamStream

__all__ = [
    "RateLimitInfo",
    "StreamEvent",
    "UpstreamCall",
    "UpstreamClient",
    "UpstreamFault",
    "UpstreamResponse",
    "UpstreamStream",
    "Usage",
    "make_http_client",
]
