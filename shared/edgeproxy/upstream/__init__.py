"""Upstream calls: the httpx and Bedrock clients, provider adapters and stream parsing.

client.py            UpstreamClient.send / open_stream (dispatches bedrock), make_http_client
call.py              UpstreamCall, UpstreamResponse, StreamEvent, Usage
stream.py            UpstreamStream (idle deadline, completeness) over a StreamSource
errors.py            the one translation of httpx errors and error answers into UpstreamFault
headers.py           Retry-After and rate-limit headers
openai.py            OpenAI / OpenAI-compatible adapter
azure.py             Azure OpenAI adapter (deployment paths, api-version, api-key)
anthropic*.py        Anthropic Messages adapter and stream translation
bedrock*.py          Bedrock Converse client, translation, event stream, botocore errors
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
