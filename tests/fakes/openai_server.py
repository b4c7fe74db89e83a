"""A fake OpenAI Chat Completions API on 127.0.0.1, streaming and non-streaming, with prompt caching.

Endpoints: ``POST /v1/chat/completions``; ``GET /v1/models`` and a local server's own (``/props``,
``/tokenize``, ``/api/show`` ...) answered as probes (``srv.probes``, not ``srv.requests``).
``srv.base_url`` is ``http://127.0.0.1:PORT/v1`` (the SDK appends ``/chat/completions``).

Cache simulation (implicit prefix caching)
------------------------------------------
The request is flattened into canonical blocks (``tokens.openai_blocks``: tools, then messages).
``prompt_tokens_details.cached_tokens`` is the longest common prefix, in tokens
(``tokens.common_prefix_tokens``), with any earlier live request of the same model and the same
``prompt_cache_key`` (requests without a key only match each other), capped at
``prompt_tokens - 1`` (the last token is always computed), rounded down to a multiple of 128, and 0
when under 1,024. Every request is remembered; an entry lives ``ttl_seconds`` (300) after its
last use, or 24 hours when the request had ``prompt_cache_retention: "24h"``.
``prompt_tokens`` is the whole prompt; cached tokens are a subset of it (unlike Anthropic's fields).

Two servers in one (``compatible``)
-----------------------------------
``FakeOpenAI()`` plays OpenAI itself and refuses (400) what it refuses, with the model facts of the
product's table (``core/providers/models.py``; an unknown model gets its strictest figures):
``max_tokens`` on a reasoning model (gpt-5, o-series), a reply limit above the model's maximum
output, ``prompt_cache_retention`` on a model that does not take it, and a prompt (plus the reply
limit) longer than the model's window. ``FakeOpenAI(compatible=True)`` plays Ollama / llama.cpp /
LM Studio: it reads ``max_tokens`` and ignores ``max_completion_tokens`` and
``prompt_cache_retention``, as Ollama's OpenAI compatibility does (its "Supported request fields"
list ``max_tokens`` and neither of the others: docs.ollama.com/api/openai-compatibility; unknown
fields are dropped by its JSON decoding). ``rec.cache["output_limit"]`` is the limit the fake
honoured (None: none), so a test can tell which field counted. ``context_window=N`` plays a server
started with an N-token context (llama.cpp ``-c N``, Ollama ``num_ctx``): a prompt longer than N is
refused (400, llama.cpp's "the request exceeds the available context size, try increasing it", with
the sizes, as its ``exceed_context_size_error`` gives ``n_prompt_tokens`` and ``n_ctx``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ._base import (
    DeltaCounter,
    Exchange,
    FakeServerBase,
    HttpError,
    MalformedSSE,
    Plan,
    StreamError,
    Text,
    ToolCall,
    run_stream,
)
from core.providers import models as model_table

from .tokens import Block, common_prefix_tokens, count_text, openai_blocks

MIN_CACHED_TOKENS = model_table.OPENAI_MIN_CACHEABLE
CACHE_STEP = 128
DEFAULT_TTL_SECONDS = 300.0
RETENTION_SECONDS = {"in_memory": DEFAULT_TTL_SECONDS, "24h": 86400.0}

# status -> (type, code, message)
ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request"),
    401: ("invalid_request_error", "invalid_api_key",
          "Incorrect API key provided: {key}. You can find your API key at https://platform.openai.com/account/api-keys."),
    403: ("request_forbidden", "unsupported_country_region_territory", "Country, region, or territory not supported"),
    404: ("invalid_request_error", "model_not_found", "The model `{model}` does not exist or you do not have access to it."),
    429: ("requests", "rate_limit_exceeded",
          "Rate limit reached for {model} on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later"),
}

# OpenAI's reasoning models take only max_completion_tokens (the Chat Completions reference:
# max_tokens "is not compatible with o-series models"; the API answers "Unsupported parameter:
# 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.").
REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")
RETENTIONS = ("in_memory", "24h")


def request_error(body: dict, blocks: list[Block]) -> tuple[str, str | None, str | None] | None:
    """(message, param, code) of what OpenAI itself refuses in ``body``, or None."""
    model = str(body.get("model", ""))
    facts = model_table.facts(model, "openai")
    if "max_tokens" in body and REASONING_MODEL.match(model):
        return ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
    param = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    limit = body.get(param)
    if isinstance(limit, int) and limit > facts.max_output:
        # "max_tokens is too large: 100000. This model supports at most 16384 completion tokens,
        # whereas you provided 100000."
        return (f"{param} is too large: {limit}. This model supports at most {facts.max_output} completion "
                f"tokens, whereas you provided {limit}.", param, "invalid_value")
    retention = body.get("prompt_cache_retention")
    if retention is not None:
        if retention not in RETENTIONS:
            return (f"Invalid value: '{retention}'. Supported values are: 'in_memory' and '24h'.",
                    "prompt_cache_retention", "invalid_value")
        if retention == "24h" and not facts.cache_retention_24h:
            # Extended retention is "available for" a listed set of models only (the prompt-caching
            # guide); the exact wording of this refusal is the fake's.
            return (f"prompt_cache_retention '24h' is not supported with the model {model}.",
                    "prompt_cache_retention", "unsupported_value")
    prompt = sum(b.tokens for b in blocks)
    asked = limit if isinstance(limit, int) else 0
    if prompt > facts.input_limit or prompt + asked > facts.context_window:
        # "This model's maximum context length is 128000 tokens. However, you requested 130000 tokens
        # (125000 in the messages, 5000 in the completion). Please reduce the length of the messages
        # or completion." (code context_length_exceeded)
        window = facts.input_limit if prompt > facts.input_limit else facts.context_window
        if asked:
            return (f"This model's maximum context length is {window} tokens. However, you requested "
                    f"{prompt + asked} tokens ({prompt} in the messages, {asked} in the completion). "
                    "Please reduce the length of the messages or completion.", "messages", "context_length_exceeded")
        return (f"This model's maximum context length is {window} tokens. However, your messages resulted in "
                f"{prompt} tokens. Please reduce the length of the messages.", "messages", "context_length_exceeded")
    return None


FINISH_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "stop_sequence": "stop",
                  "refusal": "content_filter"}


@dataclass
class PromptEntry:
    model: str
    cache_key: str | None
    blocks: list[Block]
    ttl: float
    expires_at: float


class OpenAICache:
    def __init__(self, clock: Callable[[], float], ttl_seconds: float = DEFAULT_TTL_SECONDS,
                 min_tokens: int = MIN_CACHED_TOKENS, step: int = CACHE_STEP):
        self.clock = clock
        self.ttl_seconds = ttl_seconds
        self.min_tokens = min_tokens
        self.step = step
        self.entries: list[PromptEntry] = []

    def clear(self) -> None:
        self.entries.clear()

    def process(self, model: str, cache_key: str | None, blocks: list[Block], retention: str | None) -> dict:
        now = self.clock()
        self.entries = [e for e in self.entries if e.expires_at > now]
        total = sum(b.tokens for b in blocks)
        best, best_entry = 0, None
        for e in self.entries:
            if e.model != model or e.cache_key != cache_key:
                continue
            n = common_prefix_tokens(e.blocks, blocks)
            if n > best:
                best, best_entry = n, e
        lcp = min(best, max(0, total - 1))
        cached = (lcp // self.step) * self.step if lcp >= self.min_tokens else 0
        if cached and best_entry is not None:
            best_entry.expires_at = max(best_entry.expires_at, now + best_entry.ttl)
        ttl = RETENTION_SECONDS["24h"] if retention == "24h" else self.ttl_seconds
        self.entries.append(PromptEntry(model, cache_key, blocks, ttl, now + ttl))
        return {"prompt_tokens": total, "cached_tokens": cached, "common_prefix_tokens": best,
                "prompt_cache_key": cache_key, "prompt_cache_retention": retention}


class FakeOpenAI(FakeServerBase):
    """Fake OpenAI Chat Completions API. ``with FakeOpenAI() as srv: OpenAI(base_url=srv.base_url)``.

    Args:
        clock: seconds-returning callable for cache TTLs (default: monotonic + ``advance_time``).
        api_key: if set, other bearer tokens get 401 invalid_api_key.
        models: if set, other models get 404 model_not_found.
        ttl_seconds: life of a cached prefix without ``prompt_cache_retention: "24h"`` (300).
        min_cached_tokens / cache_step: 1,024 and 128.
        compatible: play an OpenAI-compatible server (Ollama, llama.cpp, LM Studio), not OpenAI.
        context_window: with ``compatible``, the server's context size; longer prompts are refused.
        default_reply: reply when the script is empty (``[text("ok")]``).
    """

    base_path = "/v1"

    def __init__(
        self,
        *,
        clock: Callable[[], float] | None = None,
        api_key: str | None = None,
        models: Iterable[str] | None = None,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        min_cached_tokens: int = MIN_CACHED_TOKENS,
        cache_step: int = CACHE_STEP,
        default_reply: list | None = None,
        compatible: bool = False,
        context_window: int | None = None,
        template_tools: bool | None = None,
        tokenize: bool = False,
        served: str | None = None,
    ) -> None:
        super().__init__(clock=clock, api_key=api_key, default_reply=default_reply)
        self.models = set(models) if models is not None else None
        self.compatible = compatible
        self.context_window = context_window
        # llama.cpp's /props chat_template_caps.supports_tools (None: not reported, as an older build)
        self.template_tools = template_tools
        self.tokenize = tokenize  # llama.cpp's POST /tokenize, counting as this fake's usage counts
        self.served = served  # the one model a llama.cpp serves, whatever a request names (None: as `models`)
        self.cache = OpenAICache(lambda: self.clock(), ttl_seconds, min_cached_tokens, cache_step)

    def _reset_cache(self) -> None:
        self.cache.clear()

    @property
    def prompt_cache_keys(self) -> list[str | None]:
        """The ``prompt_cache_key`` of each recorded chat request, in order."""
        return [r.body.get("prompt_cache_key") for r in self.requests
                if isinstance(r.body, dict) and "messages" in r.body]

    # errors ----------------------------------------------------------------------------------
    def _error(self, ex: Exchange, status: int, message: str | None = None, error_type: str | None = None,
               code: str | None = None, headers: dict[str, str] | None = None, param: str | None = None) -> None:
        etype, ecode, default_msg = ERRORS.get(status, ("server_error" if status >= 500 else "invalid_request_error",
                                                        None, "Error"))
        body = ex.body if isinstance(ex.body, dict) else {}
        key = ex.rec.headers.get("authorization", "").removeprefix("Bearer ")
        masked = (key[:3] + "*" * max(0, len(key) - 7) + key[-4:]) if len(key) > 7 else "***"
        msg = message if message is not None else default_msg.format(model=body.get("model", ""), key=masked)
        err = {"error": {"message": msg, "type": error_type or etype, "param": param, "code": code or ecode}}
        ex.send_json(status, err, {"x-request-id": self._new_id("req_"), **(headers or {})})

    def _scripted_error(self, ex: Exchange, err: HttpError) -> None:
        headers = dict(err.headers)
        if err.retry_after is not None:
            headers["retry-after"] = self._retry_after_value(err.retry_after)
        status = 503 if err.status == 529 else err.status
        self._error(ex, status, err.message, err.error_type, err.code, headers)

    # The native endpoints a local server is asked about itself (core/providers/local_window.py,
    # core/providers/local_server.py), kept out of `requests`. Like llama.cpp started with --api-key,
    # they answer 401 without the key (its middleware lets only /health and the model lists through).
    NATIVE = ("/props", "/api/ps", "/api/v0/models/", "/api/show", "/tokenize")

    def native_answer(self, method: str, path: str, rec=None):
        path = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path == "/v1/models":  # public on llama.cpp; OpenAI wants the key
            if (not self.compatible and self.api_key is not None
                    and (rec is None or rec.headers.get("authorization", "") != f"Bearer {self.api_key}")):
                return 401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                       "param": None, "code": "invalid_api_key"}}
            served = [self.served] if self.served else sorted(self.models or ())
            return 200, {"object": "list", "data": [{"id": m, "object": "model", "created": 1700000000,
                                                     "owned_by": "system"} for m in served]}
        if not path.startswith(self.NATIVE):
            return None
        if self.api_key is not None and (rec is None or rec.headers.get("authorization", "") != f"Bearer {self.api_key}"):
            return 401, {"error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}}
        if method == "GET" and path.startswith("/props") and self.compatible and self.context_window is not None:
            # llama.cpp's llama-server started with -c context_window (its README, GET /props)
            props = {"default_generation_settings": {"n_ctx": self.context_window}}
            if self.template_tools is not None:
                props["chat_template_caps"] = {"supports_tools": self.template_tools,
                                               "supports_tool_calls": self.template_tools}
            return 200, props
        if method == "POST" and path == "/tokenize" and self.compatible and self.tokenize:
            content = rec.body.get("content", "") if rec is not None and isinstance(rec.body, dict) else ""
            return 200, {"tokens": list(range(count_text(str(content))))}
        return 404, {"error": {"message": f"Invalid URL ({method} {path})", "type": "invalid_request_error"}}

    # routing ---------------------------------------------------------------------------------
    def _dispatch(self, ex: Exchange) -> None:
        path = ex.rec.path.split("?", 1)[0].rstrip("/")
        if self.api_key is not None:
            if ex.rec.headers.get("authorization", "") != f"Bearer {self.api_key}":
                return self._error(ex, 401)
        if ex.rec.method != "POST" or path != "/v1/chat/completions":
            return self._error(ex, 404, f"Invalid URL ({ex.rec.method} {path})", code=None)
        body = ex.body
        if not isinstance(body, dict):
            return self._error(ex, 400, "We could not parse the JSON body of your request.")
        for f in ("model", "messages"):
            if f not in body:
                return self._error(ex, 400, f"Missing required parameter: '{f}'.", code="missing_required_parameter",
                                   param=f)
        if self.models is not None and body["model"] not in self.models:
            return self._error(ex, 404)
        unpaired = tool_message_error(body)  # tool_calls / tool pairing (see tool_message_error)
        if unpaired is not None and not getattr(self, "compatible", False):
            return self._error(ex, 400, unpaired[0], param=unpaired[1])
        blocks = openai_blocks(body)
        if not self.compatible:
            refused = request_error(body, blocks)
            if refused is not None:
                message, param, code = refused
                return self._error(ex, 400, message, code=code, param=param)
            output_limit = body.get("max_completion_tokens", body.get("max_tokens"))
            retention = body.get("prompt_cache_retention")
        else:  # Ollama & co. read max_tokens; max_completion_tokens and the retention are dropped
            prompt = sum(b.tokens for b in blocks)
            if self.context_window is not None and prompt > self.context_window:
                return self._error(ex, 400, f"the request exceeds the available context size, try increasing it "
                                   f"(n_prompt_tokens {prompt} > n_ctx {self.context_window})",
                                   error_type="exceed_context_size_error")
            output_limit = body.get("max_tokens")
            retention = None

        reply = self._next_reply(body)
        ex.rec.reply = reply
        plan = Plan.from_reply(reply)
        ex.sleep(plan.delay_headers)
        if plan.error is not None:
            return self._scripted_error(ex, plan.error)
        with self._lock:
            cache = self.cache.process(body["model"], body.get("prompt_cache_key"), blocks, retention)
        cache["output_limit"] = output_limit
        ex.rec.cache = cache
        usage = self._usage(cache, plan)
        ex.rec.usage = usage
        if body.get("stream"):
            run_stream(ex, lambda: self._stream(ex, plan, body, usage))
        else:
            self._respond(ex, plan, body, usage)

    # replies ---------------------------------------------------------------------------------
    @staticmethod
    def _usage(cache: dict, plan: Plan) -> dict:
        completion = max(1, count_text(plan.output_text()))
        return {
            "prompt_tokens": cache["prompt_tokens"],
            "completion_tokens": completion,
            "total_tokens": cache["prompt_tokens"] + completion,
            "prompt_tokens_details": {"cached_tokens": cache["cached_tokens"], "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        }

    @staticmethod
    def _finish_reason(plan: Plan) -> str:
        if plan.stop:
            return FINISH_REASONS.get(plan.stop, plan.stop)
        return "tool_calls" if any(isinstance(a, ToolCall) for a in plan.content) else "stop"

    def _call_id(self, a: ToolCall) -> str:
        return a.id or self._new_id("call_")

    def _respond(self, ex: Exchange, plan: Plan, body: dict, usage: dict) -> None:
        ex.sleep(plan.delay_first)
        if plan.stream_err is not None:
            return self._error(ex, 500, plan.stream_err.message, "server_error")
        texts = [a.text for a in plan.content if isinstance(a, Text)]
        calls = [{"id": self._call_id(a), "type": "function", "function": {"name": a.name, "arguments": a.raw_arguments}}
                 for a in plan.content if isinstance(a, ToolCall)]
        message: dict = {"role": "assistant", "content": "".join(texts) if texts else None, "refusal": None,
                         "annotations": []}
        if calls:
            message["tool_calls"] = calls
        resp = {
            "id": self._new_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": self._finish_reason(plan)}],
            "usage": usage,
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }
        headers = {"x-request-id": self._new_id("req_")}
        if plan.cut is not None:
            return ex.send_truncated_json(200, resp, headers)
        if plan.malformed is not None:
            return ex.send_raw_body(200, b'{"id": "chatcmpl-broken", "choices": [', "application/json", headers)
        ex.send_json(200, resp, headers)

    def _stream(self, ex: Exchange, plan: Plan, body: dict, usage: dict) -> None:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        cid, created = self._new_id("chatcmpl-"), int(time.time())

        def chunk(delta: dict | None, finish: str | None = None, *, choices: list | None = None,
                  usage_value: dict | None = None) -> dict:
            c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": body["model"],
                 "service_tier": "default", "system_fingerprint": "fp_fake",
                 "choices": choices if choices is not None else
                 [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
            if include_usage:
                c["usage"] = usage_value
            return c

        ex.start_sse({"x-request-id": self._new_id("req_")})

        def on_malformed(m: MalformedSSE) -> None:
            if m.kind == "junk_line":
                ex.write_raw(b"this line is not an SSE field\n\n")
            else:
                ex.write_raw(b'data: {"id":"' + cid.encode() + b'","object":"chat.completion.chunk","choices":[{"ind\n\n')

        def on_error(e: StreamError) -> None:
            ex.sse({"error": {"message": e.message, "type": "server_error", "param": None, "code": None}})

        counter = DeltaCounter(ex, plan, on_malformed, on_error)
        starts_with_tool = bool(plan.content) and isinstance(plan.content[0], ToolCall)
        ex.sse(chunk({"role": "assistant", "content": None if starts_with_tool else "", "refusal": None}))
        counter.before_first()
        tool_index = 0
        for a in plan.content:
            if isinstance(a, Text):
                for piece in a.deltas:
                    counter.check()
                    ex.sse(chunk({"content": piece}))
                    counter.sent()
            else:
                ex.sse(chunk({"tool_calls": [{"index": tool_index, "id": self._call_id(a), "type": "function",
                                              "function": {"name": a.name, "arguments": ""}}]}))
                for piece in a.deltas:
                    counter.check()
                    ex.sse(chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": piece}}]}))
                    counter.sent()
                tool_index += 1
        counter.check()
        ex.sse(chunk({}, self._finish_reason(plan)))
        if include_usage:
            ex.sse(chunk(None, choices=[], usage_value=usage))
        ex.sse("[DONE]")
        ex.end_stream()


def tool_message_error(body: dict) -> tuple[str, str] | None:
    """(message, param) of the 400 OpenAI gives a request whose tool messages are not paired, or None.

    - an assistant message with ``tool_calls`` is followed by a ``tool`` message for each id: "An
      assistant message with 'tool_calls' must be followed by tool messages responding to each
      'tool_call_id'. The following tool_call_ids did not have response messages: call_…"
      (microsoft/promptflow PR 3130 quotes it);
    - a ``tool`` message answers a ``tool_calls`` before it: "Invalid parameter: messages with role
      'tool' must be a response to a preceeding message with 'tool_calls'." (param
      ``messages.[N].role``; miurla/morphic issue 136, smarter-sh/smarter issue 264).
    """
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            k = i - 1
            while k >= 0 and messages[k].get("role") == "tool":
                k -= 1
            asked = {c.get("id") for c in (messages[k].get("tool_calls") or []) if isinstance(c, dict)} \
                if k >= 0 and messages[k].get("role") == "assistant" else set()
            if m.get("tool_call_id") not in asked:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.", f"messages.[{i}].role")
        calls = [c.get("id") for c in (m.get("tool_calls") or []) if isinstance(c, dict)] \
            if m.get("role") == "assistant" else []
        if calls:
            answered = set()
            for after in messages[i + 1:]:
                if after.get("role") != "tool":
                    break
                answered.add(after.get("tool_call_id"))
            missing = [c for c in calls if c not in answered]
            if missing:
                return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                        f"'tool_call_id'. The following tool_call_ids did not have response messages: "
                        f"{', '.join(str(c) for c in missing)}", f"messages.[{i}].role")
    return None


__all__ = ["FakeOpenAI", "tool_message_error", "OpenAICache", "MIN_CACHED_TOKENS", "CACHE_STEP"]
