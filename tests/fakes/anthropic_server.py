"""A fake Anthropic Messages API on 127.0.0.1, streaming and non-streaming, with prompt caching.

Endpoints: ``POST /v1/messages``, ``POST /v1/messages/count_tokens``, ``GET /v1/models``.
``srv.base_url`` is ``http://127.0.0.1:PORT`` (the SDK appends ``/v1/messages``).

Cache simulation (no kinder than the real service)
--------------------------------------------------
The request is flattened into canonical blocks (``tokens.anthropic_blocks``: tools, system,
message content). Blocks carrying ``cache_control`` are breakpoints (at most 4, else 400; a
``ttl: "1h"`` breakpoint may not follow a 5-minute one, else 400; a top-level ``cache_control``
puts one on the last block). An entry is keyed by the model plus the hash of all blocks up to and
including its block. For a request:

* breakpoints whose prefix is shorter than the model's minimum (``min_cacheable_tokens``) are
  ignored: no lookup, no write, no error (as the real API silently does);
* for each remaining breakpoint at block ``p``, the server looks for a live entry ending at
  ``p, p-1, ..., p-19`` (the 20-block lookback window counts the breakpoint itself) and takes the
  nearest; the hit is the longest over all breakpoints and is refreshed (its TTL restarts);
* ``cache_read_input_tokens`` = tokens up to the end of the hit;
  ``cache_creation_input_tokens`` = tokens from there to the last eligible breakpoint (split into
  ``cache_creation.ephemeral_5m/1h_input_tokens`` by the TTL of the breakpoint closing each span),
  and an entry is written at each eligible breakpoint past the hit;
  ``input_tokens`` = everything else (after the last breakpoint, or all when nothing is cached).
* entries expire 5 minutes (``ttl: "1h"``: 1 hour) after their last write or hit, on ``srv.clock``.

Model facts (minimum cacheable prefix, context window, maximum output) come from the table the
product reads, ``core/providers/models.py``, where each figure names its source; a model the table
does not know gets its strictest figures, as in the product.

Request rules (each a 400 invalid_request_error, as the real API answers; see ``request_error``):
empty text blocks, ``cache_control`` on an empty text block, more than 4 breakpoints, a 1h
breakpoint after a 5m one, tool definitions (name pattern, object input_schema, unique names),
``max_tokens`` above the model's maximum output, a prompt longer than the model's window, and a
prompt plus ``max_tokens`` longer than it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Callable, Iterable, Mapping

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
import re

from core.providers import models as model_table

from .tokens import Block, anthropic_blocks, count_text, prefix_hashes, prefix_tokens

LOOKBACK_BLOCKS = 20
MAX_BREAKPOINTS = 4
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "model: {model}"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "This request would exceed the rate limit for your organization. Please retry later."),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}
STATUS_OF_ERROR_TYPE = {t: s for s, (t, _) in ERRORS.items() if s not in (503,)}


def min_cacheable_tokens(model: str, overrides: Mapping[str, int] | int | None = None, default: int | None = None) -> int:
    """Minimum prefix length (tokens) below which a breakpoint caches nothing for ``model``: the
    product's model table (``core/providers/models.py``).

    ``overrides``: an int for every model, or {substring: minimum} checked before the table;
    ``default``: the minimum of a model the table does not know (else the table's strictest).
    """
    if isinstance(overrides, int):
        return overrides
    for pattern, n in (overrides or {}).items():
        if pattern in model:
            return n
    if default is not None and model_table.lookup(model) is None:
        return default
    return model_table.facts(model, "anthropic").min_cacheable


# tools.N.custom.name: the API's pattern for a custom tool's name (Anthropic's "Define tools" docs:
# "Must match the regex ^[a-zA-Z0-9_-]{1,64}$").
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def request_error(body: dict, blocks: list[Block], *, count_only: bool = False) -> str | None:
    """What the real Messages API refuses in ``body`` (its 400 message), or None."""
    model = str(body.get("model", ""))
    facts = model_table.facts(model, "anthropic")
    names: set[str] = set()
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or tool.get("type", "custom") != "custom":
            continue  # server tools (web_search_...) have their own shapes
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            # "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"
            return f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if name in names:
            return "tools: Tool names must be unique."  # the API's text for a repeated name
        names.add(name)
        schema = tool.get("input_schema")
        if schema is None:
            return f"tools.{i}.custom.input_schema: Field required"
        if not isinstance(schema, dict) or schema.get("type") != "object":
            # input_schema is a JSON Schema object ("type": "object"), Define tools docs
            return f"tools.{i}.custom.input_schema.type: Input should be 'object'"
    system = body.get("system")
    parts = [("system", p) for p in system] if isinstance(system, list) else []
    for m, msg in enumerate(body.get("messages") or []):
        content = msg.get("content") if isinstance(msg, dict) else None
        last_assistant = m == len(body["messages"]) - 1 and msg.get("role") == "assistant"
        if content in ("", []) and not last_assistant:
            # the API: "messages.0: all messages must have non-empty content except for the optional
            # final assistant message"
            return f"messages.{m}: all messages must have non-empty content except for the optional final assistant message"
        if isinstance(content, list):
            parts.extend(("messages", p) for p in content)
    for where, part in parts:
        if isinstance(part, dict) and part.get("type") == "text" and part.get("text") == "":
            if part.get("cache_control") is not None:
                return "cache_control cannot be set for empty text blocks"  # the API's 400
            return f"{where}: text content blocks must be non-empty"  # the API's 400
    if count_only:
        return None
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, int) and max_tokens > facts.max_output:
        # "max_tokens: 8193 > 8192, which is the maximum allowed number of output tokens for claude-..."
        return f"max_tokens: {max_tokens} > {facts.max_output}, which is the maximum allowed number of output tokens for {model}"
    prompt = sum(b.tokens for b in blocks)
    if prompt > facts.context_window:
        # "prompt is too long: 208310 tokens > 200000 maximum" (anthropics/claude-code issue 12186)
        return f"prompt is too long: {prompt} tokens > {facts.context_window} maximum"
    if isinstance(max_tokens, int) and prompt + max_tokens > facts.context_window:
        # Models from Claude Sonnet 3.7 on "return a validation error when prompt and output tokens
        # exceed the context window, rather than silently truncating" (Anthropic's context-windows docs)
        return (f"input length and `max_tokens` exceed context limit: {prompt} + {max_tokens} > "
                f"{facts.context_window}, decrease input length or `max_tokens` and try again")
    return None


@dataclass
class CacheEntry:
    model: str
    position: int  # index of the last block of the prefix
    tokens: int
    ttl: str
    expires_at: float


@dataclass
class CacheResult:
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int
    total_tokens: int
    hit_position: int | None  # block index the read prefix ends at
    breakpoints: list[int]  # all breakpoint positions
    eligible: list[int]  # breakpoints long enough to cache
    written: list[int]  # positions written (new or rewritten entries)
    minimum: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class CacheRequestError(ValueError):
    pass


def breakpoints_of(body: dict, blocks: list[Block]) -> list[tuple[int, str]]:
    """(position, ttl) of each cache_control breakpoint; raises CacheRequestError like the API's 400s."""
    bps: list[tuple[int, str]] = []
    for i, b in enumerate(blocks):
        if b.cache_control is not None:
            bps.append((i, _ttl_of(b.cache_control)))
    top = body.get("cache_control")
    if top is not None and blocks:
        ttl = _ttl_of(top)
        if not bps or bps[-1][0] != len(blocks) - 1:
            bps.append((len(blocks) - 1, ttl))
    if len(bps) > MAX_BREAKPOINTS:
        raise CacheRequestError(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(bps)}.")
    seen_5m = False
    for position, ttl in bps:
        if ttl == "5m":
            seen_5m = True
        elif seen_5m:
            # The API's 400 (kristianvast/hermes-claude-auth issue 31; headroomlabs-ai/headroom issue 2939:
            # "messages.15.content.1: ..."), naming the 1h block that came too late.
            path = _block_paths(body)[position] if position < len(blocks) else "cache_control"
            raise CacheRequestError(
                f"{path}.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' "
                "cache_control block. Note that blocks are processed in the following order: `tools`, "
                "`system`, `messages`."
            )
    return bps


def _block_paths(body: dict) -> list[str]:
    """The API's path of each canonical block (``tokens.anthropic_blocks``' order): tools.N, system.N,
    messages.N.content.M."""
    paths = [f"tools.{i}" for i, _ in enumerate(body.get("tools") or [])]
    system = body.get("system")
    if isinstance(system, str) and system:
        paths.append("system")
    elif isinstance(system, list):
        paths += [f"system.{i}" for i, _ in enumerate(system)]
    for m, msg in enumerate(body.get("messages") or []):
        content = msg.get("content")
        if isinstance(content, str):
            paths.append(f"messages.{m}.content")
        elif isinstance(content, list):
            paths += [f"messages.{m}.content.{j}" for j, _ in enumerate(content)]
    return paths


def _ttl_of(cc: Any) -> str:
    if not isinstance(cc, dict) or cc.get("type") != "ephemeral":
        raise CacheRequestError("cache_control.type: Input should be 'ephemeral'")
    ttl = cc.get("ttl", "5m")
    if ttl not in TTL_SECONDS:
        raise CacheRequestError("cache_control.ttl: Input should be '5m' or '1h'")
    return ttl


class AnthropicCache:
    """The prompt-cache state of one fake server (thread-safe through the server's lock)."""

    def __init__(self, clock: Callable[[], float], min_tokens: Callable[[str], int], lookback: int = LOOKBACK_BLOCKS):
        self.clock = clock
        self.min_tokens = min_tokens
        self.lookback = lookback
        self.entries: dict[str, CacheEntry] = {}

    def clear(self) -> None:
        self.entries.clear()

    def live_entries(self) -> list[CacheEntry]:
        now = self.clock()
        return [e for e in self.entries.values() if e.expires_at > now]

    def process(self, model: str, blocks: list[Block], breakpoints: list[tuple[int, str]]) -> CacheResult:
        now = self.clock()
        for k in [k for k, e in self.entries.items() if e.expires_at <= now]:
            del self.entries[k]
        ptoks = prefix_tokens(blocks)
        hashes = prefix_hashes(blocks, salt=model)
        total = ptoks[-1] if ptoks else 0
        minimum = self.min_tokens(model)
        eligible = [(p, ttl) for p, ttl in breakpoints if ptoks[p] >= minimum]

        best = -1
        for p, _ in eligible:
            for q in range(p, max(-1, p - self.lookback), -1):
                if hashes[q] in self.entries:
                    best = max(best, q)
                    break
        if best >= 0:
            hit = self.entries[hashes[best]]
            hit.expires_at = now + TTL_SECONDS[hit.ttl]
        read = ptoks[best] if best >= 0 else 0

        c5 = c1 = 0
        written = []
        prev = read
        for p, ttl in eligible:
            if p <= best:
                if hashes[p] in self.entries:  # refresh entries inside the read prefix
                    e = self.entries[hashes[p]]
                    e.expires_at = max(e.expires_at, now + TTL_SECONDS[e.ttl])
                continue
            span = ptoks[p] - prev
            prev = ptoks[p]
            if ttl == "1h":
                c1 += span
            else:
                c5 += span
            self.entries[hashes[p]] = CacheEntry(model, p, ptoks[p], ttl, now + TTL_SECONDS[ttl])
            written.append(p)
        creation = c5 + c1
        return CacheResult(
            input_tokens=total - read - creation,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=creation,
            ephemeral_5m_input_tokens=c5,
            ephemeral_1h_input_tokens=c1,
            total_tokens=total,
            hit_position=best if best >= 0 else None,
            breakpoints=[p for p, _ in breakpoints],
            eligible=[p for p, _ in eligible],
            written=written,
            minimum=minimum,
        )


class FakeAnthropic(FakeServerBase):
    """Fake Anthropic Messages API. ``with FakeAnthropic() as srv: Anthropic(base_url=srv.base_url)``.

    Args:
        clock: seconds-returning callable for cache TTLs (default: monotonic + ``advance_time``).
        api_key: if set, other keys get 401 authentication_error.
        models: if set, other models get 404 not_found_error.
        min_cache_tokens: int or {model substring: minimum} overriding the model table.
        default_min_cache_tokens: minimum for models the table does not know (default: its strictest).
        lookback: blocks searched per breakpoint, the breakpoint included (20).
        default_reply: reply when the script is empty (``[text("ok")]``).
    """

    base_path = ""

    def __init__(
        self,
        *,
        clock: Callable[[], float] | None = None,
        api_key: str | None = None,
        models: Iterable[str] | None = None,
        min_cache_tokens: Mapping[str, int] | int | None = None,
        default_min_cache_tokens: int | None = None,
        lookback: int = LOOKBACK_BLOCKS,
        default_reply: list | None = None,
    ) -> None:
        super().__init__(clock=clock, api_key=api_key, default_reply=default_reply)
        self.models = set(models) if models is not None else None
        self.min_cache_tokens = min_cache_tokens
        self.default_min_cache_tokens = default_min_cache_tokens
        self.cache = AnthropicCache(
            lambda: self.clock(),
            lambda model: min_cacheable_tokens(model, self.min_cache_tokens, self.default_min_cache_tokens),
            lookback,
        )

    def _reset_cache(self) -> None:
        self.cache.clear()

    def min_tokens_for(self, model: str) -> int:
        return min_cacheable_tokens(model, self.min_cache_tokens, self.default_min_cache_tokens)

    # errors ----------------------------------------------------------------------------------
    def _error(self, ex: Exchange, status: int, message: str | None = None, error_type: str | None = None,
               headers: dict[str, str] | None = None) -> None:
        etype, default_msg = ERRORS.get(status, ("api_error" if status >= 500 else "invalid_request_error", "Error"))
        model = (ex.body or {}).get("model", "") if isinstance(ex.body, dict) else ""
        msg = message if message is not None else default_msg.format(model=model)
        rid = self._new_id("req_")
        body = {"type": "error", "error": {"type": error_type or etype, "message": msg}, "request_id": rid}
        ex.send_json(status, body, {"request-id": rid, **(headers or {})})

    def _scripted_error(self, ex: Exchange, err: HttpError) -> None:
        headers = dict(err.headers)
        if err.retry_after is not None:
            headers["retry-after"] = self._retry_after_value(err.retry_after)
        if err.status == 529:
            headers.setdefault("x-should-retry", "true")
        self._error(ex, err.status, err.message, err.error_type, headers)

    # routing ---------------------------------------------------------------------------------
    def _dispatch(self, ex: Exchange) -> None:
        path = ex.rec.path.split("?", 1)[0].rstrip("/")
        if self.api_key is not None:
            key = ex.rec.headers.get("x-api-key") or ex.rec.headers.get("authorization", "").removeprefix("Bearer ")
            if key != self.api_key:
                return self._error(ex, 401)
        if ex.rec.method == "GET" and path == "/v1/models":
            data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                    for m in sorted(self.models or {"claude-sonnet-4-6"})]
            return ex.send_json(200, {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]})
        if ex.rec.method != "POST" or path not in ("/v1/messages", "/v1/messages/count_tokens"):
            return self._error(ex, 404, f"Not found: {ex.rec.method} {path}")
        body = ex.body
        if not isinstance(body, dict):
            return self._error(ex, 400, "Request body is not valid JSON")
        for f in ("model", "messages") + (("max_tokens",) if path == "/v1/messages" else ()):
            if f not in body:
                return self._error(ex, 400, f"{f}: Field required")
        if self.models is not None and body["model"] not in self.models:
            return self._error(ex, 404)
        known = model_table.lookup(str(body["model"]))
        if known is not None and known.retires and date.today().isoformat() >= known.retires:
            # A model past its end-of-life: the API answers 404 not_found_error "model: <id>" (the model
            # table's [A-retire]: spring-projects/spring-ai PR 2387, "model: claude-2.1").
            return self._error(ex, 404)
        blocks = anthropic_blocks(body)
        try:
            bps = breakpoints_of(body, blocks)
        except CacheRequestError as e:
            return self._error(ex, 400, str(e))
        refused = request_error(body, blocks, count_only=path == "/v1/messages/count_tokens")
        if refused is not None:
            return self._error(ex, 400, refused)
        unpaired = tool_pairing_error(body)  # tool_use / tool_result pairing (see tool_pairing_error)
        if unpaired is not None:
            return self._error(ex, 400, unpaired)
        if path == "/v1/messages/count_tokens":
            return ex.send_json(200, {"input_tokens": sum(b.tokens for b in blocks)})

        reply = self._next_reply(body)
        ex.rec.reply = reply
        plan = Plan.from_reply(reply)
        ex.sleep(plan.delay_headers)
        if plan.error is not None:
            return self._scripted_error(ex, plan.error)
        with self._lock:
            result = self.cache.process(body["model"], blocks, bps)
        ex.rec.cache = result.as_dict()
        usage = self._usage(result, plan)
        ex.rec.usage = usage
        if body.get("stream"):
            run_stream(ex, lambda: self._stream(ex, plan, body, result, usage))
        else:
            self._respond(ex, plan, body, usage)

    # replies ---------------------------------------------------------------------------------
    @staticmethod
    def _usage(result: CacheResult, plan: Plan) -> dict:
        return {
            "input_tokens": result.input_tokens,
            "cache_creation_input_tokens": result.cache_creation_input_tokens,
            "cache_read_input_tokens": result.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": result.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": result.ephemeral_1h_input_tokens,
            },
            "output_tokens": max(1, count_text(plan.output_text())),
            "service_tier": "standard",
        }

    @staticmethod
    def _stop_reason(plan: Plan) -> str:
        if plan.stop:
            return plan.stop
        return "tool_use" if any(isinstance(a, ToolCall) for a in plan.content) else "end_turn"

    def _tool_id(self, a: ToolCall) -> str:
        return a.id or self._new_id("toolu_")

    def _respond(self, ex: Exchange, plan: Plan, body: dict, usage: dict) -> None:
        ex.sleep(plan.delay_first)
        if plan.stream_err is not None:
            status = STATUS_OF_ERROR_TYPE.get(plan.stream_err.error_type, 500)
            return self._error(ex, status, plan.stream_err.message, plan.stream_err.error_type)
        content = []
        for a in plan.content:
            if isinstance(a, Text):
                content.append({"type": "text", "text": a.text})
            else:
                content.append({"type": "tool_use", "id": self._tool_id(a), "name": a.name,
                                "input": a.input if a.input is not None else a.raw_arguments})
        msg = {
            "id": self._new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": self._stop_reason(plan),
            "stop_sequence": None,
            "usage": usage,
        }
        headers = {"request-id": self._new_id("req_")}
        if plan.cut is not None:
            return ex.send_truncated_json(200, msg, headers)
        if plan.malformed is not None:
            return ex.send_raw_body(200, b'{"id": "msg_broken", "type": "message", "content": [', "application/json", headers)
        ex.send_json(200, msg, headers)

    def _stream(self, ex: Exchange, plan: Plan, body: dict, result: CacheResult, usage: dict) -> None:
        ex.start_sse({"request-id": self._new_id("req_")})
        start_usage = dict(usage, output_tokens=1)
        ex.sse({"type": "message_start", "message": {
            "id": self._new_id("msg_"), "type": "message", "role": "assistant", "model": body["model"],
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage,
        }}, "message_start")

        def on_malformed(m: MalformedSSE) -> None:
            if m.kind == "junk_line":
                ex.write_raw(b"this line is not an SSE field\n\n")
            else:
                ex.write_raw(b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_del\n\n')

        def on_error(e: StreamError) -> None:
            ex.sse({"type": "error", "error": {"type": e.error_type, "message": e.message}}, "error")

        counter = DeltaCounter(ex, plan, on_malformed, on_error)
        counter.before_first()
        for index, a in enumerate(plan.content):
            if isinstance(a, Text):
                ex.sse({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                       "content_block_start")
            else:
                ex.sse({"type": "content_block_start", "index": index, "content_block": {
                    "type": "tool_use", "id": self._tool_id(a), "name": a.name, "input": {}}}, "content_block_start")
            if index == 0:
                ex.sse({"type": "ping"}, "ping")
            for piece in a.deltas:
                counter.check()
                delta = ({"type": "text_delta", "text": piece} if isinstance(a, Text)
                         else {"type": "input_json_delta", "partial_json": piece})
                ex.sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
                counter.sent()
            ex.sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        counter.check()
        ex.sse({"type": "message_delta", "delta": {"stop_reason": self._stop_reason(plan), "stop_sequence": None},
                "usage": {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                                "cache_read_input_tokens", "output_tokens")}}, "message_delta")
        ex.sse({"type": "message_stop"}, "message_stop")
        ex.end_stream()


def tool_pairing_error(body: dict) -> str | None:
    """The 400 the real Messages API gives a request whose tool blocks are not paired, or None.

    - ``tool_use`` / ``tool_result`` blocks need ``tools`` in the request: "Requests which include
      `tool_use` or `tool_result` blocks must define tools." (the API's invalid_request_error);
    - every ``tool_use`` of an assistant message is answered by a ``tool_result`` with its id in the
      very next message, a user one: "messages.N: `tool_use` ids were found without `tool_result`
      blocks immediately after: toolu_…. Each `tool_use` block must have a corresponding
      `tool_result` block in the next message." (anthropics/claude-code issues 5060, 3512);
    - every ``tool_result`` answers a ``tool_use`` of the message just before: "messages.N.content.M:
      unexpected `tool_use_id` found in `tool_result` blocks: toolu_…. Each `tool_result` block must
      have a corresponding `tool_use` block in the previous message." (anthropics/claude-code 13460).
    """
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]

    def blocks(m: dict, kind: str) -> list[tuple[int, dict]]:
        content = m.get("content")
        return [(j, b) for j, b in enumerate(content) if isinstance(b, dict) and b.get("type") == kind] \
            if isinstance(content, list) else []

    if not body.get("tools") and any(blocks(m, "tool_use") or blocks(m, "tool_result") for m in messages):
        return "Requests which include `tool_use` or `tool_result` blocks must define tools."
    for i, m in enumerate(messages):
        if m.get("role") == "user" and i > 0:
            before = messages[i - 1]
            asked = {b.get("id") for _, b in blocks(before, "tool_use")} if before.get("role") == "assistant" else set()
        else:
            asked = set()
        for j, b in blocks(m, "tool_result"):
            if b.get("tool_use_id") not in asked:
                return (f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                        "block in the previous message.")
        calls = [b.get("id") for _, b in blocks(m, "tool_use")] if m.get("role") == "assistant" else []
        if calls:
            after = messages[i + 1] if i + 1 < len(messages) else None
            answered = ({b.get("tool_use_id") for _, b in blocks(after, "tool_result")}
                        if after is not None and after.get("role") == "user" else set())
            missing = [c for c in calls if c not in answered]
            if missing:
                return (f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                        f"{', '.join(str(c) for c in missing)}. Each `tool_use` block must have a corresponding "
                        "`tool_result` block in the next message.")
    return None


__all__ = [
    "FakeAnthropic",
    "AnthropicCache",
    "CacheResult",
    "min_cacheable_tokens",
    "tool_pairing_error",
    "request_error",
    "LOOKBACK_BLOCKS",
    "MAX_BREAKPOINTS",
]
