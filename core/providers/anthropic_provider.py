"""Anthropic Messages API: system blocks and explicit cache breakpoints (at most 4, in this priority):

1. the end of the system part (tools + system are cached together) at the plan's system TTL;
2. the end of the new user text, before the volatile suffix, so the next turn reads the whole
   earlier conversation from cache, at the plan's history TTL;
3. the end of the suffix, when the agent has tools: the first step of a tool loop writes it, so the
   next step reads it (it costs 0.25x of the suffix on turns without tool calls, saves 0.9x on turns
   with them);
4. inside a turn's tool loop, the newest tool result (a sliding breakpoint);
5. the previous turn's user text, a fallback anchor within the 20-block lookback, when a slot is
   free (the API allows 4: outside a tool loop there is one to spare), at the history TTL.

The TTLs ("5m" or "1h") come from the request's `CachePlan` (core/chat/cache_policy.py chose them from
the chat's pace); a request without one (a side request) gets the system part at chat.cache_ttl's
"1h" when so configured, else 5 minutes. The API refuses "a ttl='1h' cache_control block [that comes]
after a ttl='5m' cache_control block" in the order tools, system, messages (kristianvast/hermes-claude-auth
issue 31): the plan's system TTL is never shorter than its history TTL, and 3. and 4. are 5 minutes,
so every 1h breakpoint comes first.
"""

from __future__ import annotations

import copy
import json
import threading
from typing import Iterator

from core.providers import interrupt, models
from core.providers.base import ProviderError, SDKProvider, StreamEvent, ToolCall, Turn, Usage
from core.providers.errors import translate

MAX_RETRIES = 2
MAX_BREAKPOINTS = 4


class AnthropicProvider(SDKProvider):
    name = "anthropic"

    def __init__(self, api_key: str, model: str, *, base_url: str | None = None, cache_ttl: str = "auto",
                 timeout: float | None = None):
        super().__init__(api_key, model, base_url=base_url, timeout=timeout)
        self.cache_ttl = cache_ttl

    def _new_client(self, **options):
        import anthropic

        return anthropic.Anthropic(api_key=self._api_key, base_url=self.base_url, max_retries=MAX_RETRIES, **options)

    # -- request body ------------------------------------------------------------------------------
    def body(self, turn: Turn) -> dict:
        req = turn.request
        snap = req.snapshot
        ephemeral = {"type": "ephemeral"}
        plan = req.cache
        system_ttl = plan.system_ttl if plan is not None else ("1h" if self.cache_ttl == "1h" else "5m")
        history_ttl = plan.history_ttl if plan is not None else "5m"
        system = [{"type": "text", "text": t} for t in (snap.system, snap.skills, snap.core_notes, snap.background) if t]
        system[-1]["cache_control"] = _marker(system_ttl)
        breakpoints = 1

        messages = copy.deepcopy(req.history)
        user_content = [{"type": "text", "text": req.user_text, "cache_control": _marker(history_ttl)}]
        breakpoints += 1
        if req.suffix.text:
            user_content.append({"type": "text", "text": req.suffix.text})
            if snap.tools:
                # Written now so a tool loop's next step reads the suffix instead of writing it again
                # (bench/cache.py: prefix_reuse 0.983 without it, 1.0 with it).
                user_content[-1]["cache_control"] = dict(ephemeral)
                breakpoints += 1
        loop = copy.deepcopy(turn.loop)
        if loop:
            last = loop[-1]["content"][-1]
            last["cache_control"] = dict(ephemeral)
            breakpoints += 1
        if breakpoints < MAX_BREAKPOINTS:
            anchor = _last_user_text(messages)
            if anchor is not None:
                anchor["cache_control"] = _marker(history_ttl)
        messages.append({"role": "user", "content": user_content})
        messages.extend(loop)
        # Never above the model's maximum output: the API refuses "max_tokens: N > M, which is the
        # maximum allowed number of output tokens for <model>".
        max_tokens = models.output_cap(self.facts, turn.max_tokens)
        body = {"model": self.model, "max_tokens": max_tokens, "system": system, "messages": messages}
        if snap.tools:
            body["tools"] = snap.tools
        return body

    # -- streaming ---------------------------------------------------------------------------------
    def stream(self, turn: Turn, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        body = self.body(turn)
        usage = Usage()
        try:  # interrupt: a stop does not wait for a silent server (headers, or the next chunk)
            stream = interrupt.call(lambda: self.client.messages.create(**body, stream=True), cancel)
        except interrupt.Interrupted:
            yield StreamEvent("usage", usage=usage)
            yield StreamEvent("stop", stop_reason="cancelled")
            return
        except Exception as exc:  # every SDK / transport failure becomes one clear sentence
            yield StreamEvent("error", error=self._error(exc))
            return
        blocks: dict[int, dict] = {}
        stop_reason = ""
        finished = False
        events = interrupt.read(stream, cancel)
        try:
            for event in events:
                kind = event.type
                if kind == "message_start":  # read even when stopping: the prompt was counted
                    u = event.message.usage
                    usage.cache_write = u.cache_creation_input_tokens or 0
                    # the part written for an hour (usage.cache_creation splits the writes by TTL)
                    usage.cache_write_1h = getattr(u.cache_creation, "ephemeral_1h_input_tokens", 0) or 0
                    usage.cache_read = u.cache_read_input_tokens or 0
                    usage.input = (u.input_tokens or 0) + usage.cache_write + usage.cache_read
                    usage.output = u.output_tokens or 0
                if cancel is not None and cancel.is_set():
                    events.close()  # the reader closes the stream
                    yield StreamEvent("usage", usage=usage)
                    yield StreamEvent("stop", stop_reason="cancelled")
                    return
                if kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks[event.index] = {"id": block.id, "name": block.name, "json": ""}
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        yield StreamEvent("text", text=delta.text)
                    elif delta.type == "input_json_delta" and event.index in blocks:
                        blocks[event.index]["json"] += delta.partial_json
                elif kind == "content_block_stop" and event.index in blocks:
                    yield StreamEvent("tool_call", tool_call=_tool_call(blocks.pop(event.index)))
                elif kind == "message_delta":
                    stop_reason = event.delta.stop_reason or stop_reason
                    if event.usage is not None and event.usage.output_tokens is not None:
                        usage.output = event.usage.output_tokens
                elif kind == "message_stop":
                    finished = True
        except interrupt.Interrupted:  # stopped while the server was silent
            yield StreamEvent("usage", usage=usage)
            yield StreamEvent("stop", stop_reason="cancelled")
            return
        except Exception as exc:
            yield StreamEvent("usage", usage=usage)
            yield StreamEvent("error", error=self._error(exc, mid_stream=True))
            return
        yield StreamEvent("usage", usage=usage)
        if not finished:
            yield StreamEvent("error", error=ProviderError(
                "The connection to Anthropic was cut mid-reply; the partial reply is kept, marked incomplete.",
                kind="cut"))
            return
        yield StreamEvent("stop", stop_reason=stop_reason or "end_turn")

    def _error(self, exc: Exception, mid_stream: bool = False) -> ProviderError:
        err = translate(exc, "anthropic", self.model, self.base_url, MAX_RETRIES, "ANTHROPIC_API_KEY",
                        api_key=self._api_key)
        if mid_stream and err.kind == "timeout":
            return ProviderError(f"Anthropic stopped sending mid-reply and did not answer in time ({self.base_url or 'Anthropic'}); "
                                 "the partial reply is kept, marked incomplete.", kind="timeout", retryable=True)
        if mid_stream and err.kind in ("error", "connection"):
            return ProviderError("The connection to Anthropic was cut mid-reply; the partial reply is kept, "
                                 f"marked incomplete ({type(exc).__name__}).", kind="cut")
        return err


def _marker(ttl: str) -> dict:
    """A breakpoint's cache_control: 5 minutes is the API's default (no `ttl` sent), one hour says so."""
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def _tool_call(block: dict) -> ToolCall:
    raw = block["json"] or "{}"
    try:
        args = json.loads(raw)
        if not isinstance(args, dict):
            raise ValueError("not an object")
        return ToolCall(block["id"], block["name"], args, raw)
    except ValueError as exc:
        return ToolCall(block["id"], block["name"], None, raw, f"arguments are not a JSON object: {exc}")


def _last_user_text(messages: list[dict]) -> dict | None:
    for message in reversed(messages):
        if message["role"] != "user":
            continue
        for block in reversed(message["content"]):
            if block.get("type") == "text":
                return block
    return None
