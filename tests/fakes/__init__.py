"""Fake LLM provider servers for tests and benchmarks (standard library only, 127.0.0.1 only).

    from fakes import FakeAnthropic, FakeOpenAI, text, tool_call, rate_limited

    with FakeAnthropic() as srv:
        srv.script.add(text("Hello there"), tool_call("search", {"q": "cairn"}))
        srv.script.add(rate_limited(retry_after=0.01))      # the next request fails once ...
        client = anthropic.Anthropic(api_key="k", base_url=srv.base_url)
        ...                                                  # ... then the default "ok" reply
        srv.requests[-1].usage, srv.requests[-1].cache

    srv.responder = lambda body: text(f"{len(body['messages'])} messages")  # replies computed per request
    srv.responder = ObedientModel()                          # a model that obeys injected instructions

See ``_base`` (script actions and faults), ``anthropic_server`` / ``openai_server`` (wire formats
and cache simulations), ``obedient`` (the obedient model and its marker syntax) and ``tokens`` (token
estimate and canonical block serialisation).
"""

from ._base import (
    CutAfter,
    HttpError,
    MalformedSSE,
    ManualClock,
    RecordedRequest,
    Script,
    Slow,
    StopReason,
    StreamError,
    Text,
    ToolCall,
    cut_after,
    forbidden,
    http_error,
    invalid_tool_json,
    malformed_sse,
    model_not_found,
    overloaded,
    rate_limited,
    server_error,
    slow,
    stop_reason,
    stream_error,
    text,
    tool_call,
    unauthorized,
)
from ._base import Responder, as_reply
from .anthropic_server import FakeAnthropic, min_cacheable_tokens
from .obedient import ObedientModel
from .openai_server import FakeOpenAI
from . import tokens

__all__ = [
    "FakeAnthropic",
    "FakeOpenAI",
    "ObedientModel",
    "Responder",
    "as_reply",
    "min_cacheable_tokens",
    "tokens",
    "text",
    "tool_call",
    "invalid_tool_json",
    "stop_reason",
    "http_error",
    "unauthorized",
    "forbidden",
    "model_not_found",
    "rate_limited",
    "server_error",
    "overloaded",
    "cut_after",
    "malformed_sse",
    "stream_error",
    "slow",
    "Script",
    "RecordedRequest",
    "ManualClock",
    "Text",
    "ToolCall",
    "StopReason",
    "HttpError",
    "CutAfter",
    "MalformedSSE",
    "StreamError",
    "Slow",
]
