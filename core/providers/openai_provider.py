"""OpenAI Chat Completions, and any OpenAI-compatible server (Ollama, llama.cpp, LM Studio).

Same block order as everywhere: tools, one system message (system part, core notes, background),
history, then the user message with the volatile suffix at its end. Caching is implicit on an exact
prefix (from 1,024 tokens); a stable `prompt_cache_key` per conversation routes turns to the same
cache. A local model that refuses tools is asked again without them (retrieval-only answers).

OpenAI itself and the compatible servers differ in two fields:
* the reply's length: OpenAI takes `max_completion_tokens` ("max_tokens ... is now deprecated in
  favor of max_completion_tokens, and is not compatible with o-series models", the Chat Completions
  reference); Ollama's OpenAI compatibility lists `max_tokens` among its "Supported request fields"
  and not `max_completion_tokens` (docs.ollama.com/api/openai-compatibility), and llama.cpp's server
  and LM Studio read `max_tokens` too, so a compatible server gets `max_tokens`;
* `prompt_cache_retention: "24h"` (extended prompt caching) goes only to OpenAI, only for a model
  that takes it (the model table), and only when the user chose the longer cache (`chat.cache_ttl =
  "1h"`): its cached prefixes are kept in GPU-local storage, which is not Zero Data Retention
  eligible (OpenAI's prompt-caching guide).
A server is "compatible" when the base URL is set and is not api.openai.com (loopback or any other host).

A compatible server on this machine is local: no price, and the window chat.local_context_window says,
else the one the server reports on its native endpoints (core/providers/local_window.py, asked on the
first need and kept), else models.LOCAL_CONTEXT_WINDOW, assumed and said so. A server elsewhere is
never probed.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Iterator
from urllib.parse import urlparse

from core.providers import interrupt, local_server, local_window, models
from core.providers.base import ProviderError, SDKProvider, StreamEvent, ToolCall, Turn, Usage
from core.providers.errors import translate

MAX_RETRIES = 2
PROBE_TIMEOUT = 1.0  # seconds per native endpoint (a server on this machine answers at once)
MESSAGE_OVERHEAD = 8  # tokens a chat template adds around each message (ChatML's "<|im_start|>role\n ... <|im_end|>\n": 5)
OPENAI_HOSTS = ("api.openai.com",)


def is_compatible(base_url: str | None) -> bool:
    """Whether requests go to an OpenAI-compatible server rather than OpenAI itself."""
    return bool(base_url) and (urlparse(base_url).hostname or "").lower() not in OPENAI_HOSTS


def to_openai_messages(messages: list[dict]) -> list[dict]:
    """Neutral (Anthropic-shaped) messages → Chat Completions messages."""
    out: list[dict] = []
    for message in messages:
        blocks = message["content"]
        if message["role"] == "assistant":
            text = "".join(b["text"] for b in blocks if b["type"] == "text")
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b["name"], "arguments": json.dumps(b["input"], ensure_ascii=False)}}
                     for b in blocks if b["type"] == "tool_use"]
            entry: dict = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        for b in blocks:
            if b["type"] == "tool_result":
                out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": b["content"]})
        if texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


class OpenAIProvider(SDKProvider):
    name = "openai"

    def __init__(self, api_key: str, model: str, *, base_url: str | None = None, timeout: float | None = None,
                 cache_ttl: str = "5m", compatible: bool | None = None, local_window: int = 0, clock=None):
        super().__init__(api_key, model, base_url=base_url, timeout=timeout)
        self.cache_ttl = cache_ttl
        self.local_window = local_window  # chat.local_context_window (0: ask the server, else the default)
        # None: from the base URL; a test against a fake on loopback may say which API it plays.
        self.compatible = is_compatible(base_url) if compatible is None else compatible
        self.clock = clock or time.monotonic  # seconds, for re-asking a server that did not say
        self._tools_refused = False  # the server refused a request with tools: none from then on

    @property
    def serves_vendor_models(self) -> bool:
        return not self.compatible

    @property
    def local(self) -> bool:
        """A compatible server on this machine (Ollama, llama.cpp, LM Studio): asked about itself."""
        return self.compatible and not self.remote

    @property
    def facts(self) -> models.ModelFacts:
        """A model on a compatible server on this machine is local: no price, the name the server serves
        it by, and the window the config says (it wins), else the one the server reports, else the
        assumed default."""
        if not self.local:
            return models.facts(self.model, "openai")
        name = self.shown_model
        if self.local_window > 0:
            return models.facts(name, "openai", local=True, window=self.local_window,
                                source=models.WINDOW_FROM_CONFIG)
        probed = self._probed_window()
        if probed is not None:
            return models.facts(name, "openai", local=True, window=probed.tokens,
                                source=models.window_from_server(probed.source))
        return models.facts(name, "openai", local=True, source=models.WINDOW_ASSUMED)

    @property
    def shown_model(self) -> str:
        return self.server.shown_model(self.model) if self.local else self.model

    @property
    def server(self) -> local_server.ServerFacts:
        """What the local server says about itself (core/providers/local_server.py), asked with the key."""
        if not self.local:
            return local_server.ServerFacts((), None, False)
        return local_server.facts_of(self.base_url or "", self.model, self._api_key, now=self.clock(),
                                     timeout=PROBE_TIMEOUT)

    @property
    def supports_tools(self) -> bool:
        """Tools are sent unless the server refused them, or says the model's chat template has none
        (it would drop them: they would cost nothing but be counted, and no call could come back)."""
        if self._tools_refused:
            return False
        if not self.local:
            return True
        probed = self._probed_window() if self.local_window <= 0 else None
        said = probed.tools if probed is not None and probed.tools is not None else self.server.tools
        return said is not False

    @supports_tools.setter
    def supports_tools(self, value: bool) -> None:
        self._tools_refused = not value

    @property
    def label(self) -> str:
        """Who answers, for the user's sentences: OpenAI, or the local server at HOST:PORT."""
        if not self.compatible:
            return "OpenAI"
        where = urlparse(self.base_url or "").netloc or (self.base_url or "")
        return f"the local server at {where}" if self.local else f"the server at {where}"

    def prompt_tokens(self, turn: Turn) -> int | None:
        """The prompt's tokens counted by a local llama.cpp's own tokenizer (POST /tokenize) over the texts
        the chat template renders, plus MESSAGE_OVERHEAD a message for its role markers; None where the
        server cannot count (the window policy estimates then)."""
        if not self.local or not self.server.can_tokenize:
            return None
        body = self.body(turn)
        parts = [m.get("content") or "" for m in body["messages"]]
        parts += [json.dumps(c, ensure_ascii=False) for m in body["messages"] for c in m.get("tool_calls", [])]
        if "tools" in body:
            parts.append(json.dumps(body["tools"], ensure_ascii=False))
        counted = local_server.count_tokens(self.base_url or "", "\n".join(p if isinstance(p, str) else json.dumps(p)
                                                                           for p in parts), self._api_key)
        return None if counted is None else counted + MESSAGE_OVERHEAD * len(body["messages"])

    def _probed_window(self) -> local_window.Probed | None:
        """The window the local server reports for this model, shared by every provider object of this
        process (local_window.window_of): asked once, again after KEEP_ANSWER_SECONDS, and a server that
        did not say only after RETRY_SILENT_SECONDS (Ollama lists a model, with its window, once a
        request has loaded it)."""
        return local_window.window_of(self.base_url or "", self.model, now=self.clock(), timeout=PROBE_TIMEOUT,
                                      api_key=self._api_key)

    def _new_client(self, **options):
        import openai

        return openai.OpenAI(api_key=self._api_key, base_url=self.base_url, max_retries=MAX_RETRIES, **options)

    def body(self, turn: Turn) -> dict:
        req = turn.request
        snap = req.snapshot
        system = "\n\n".join(t for t in (snap.system, snap.skills, snap.core_notes, snap.background) if t)
        user = req.user_text + (f"\n\n{req.suffix.text}" if req.suffix.text else "")
        messages = [{"role": "system", "content": system}, *to_openai_messages(req.history),
                    {"role": "user", "content": user}, *to_openai_messages(turn.loop)]
        facts = self.facts
        limit = "max_tokens" if self.compatible else "max_completion_tokens"
        body = {"model": self.model, "messages": messages, limit: models.output_cap(facts, turn.max_tokens),
                "stream_options": {"include_usage": True}}
        if snap.tools and self.supports_tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t["name"], "description": t["description"], "parameters": t["input_schema"]}}
                for t in snap.tools]
        if turn.chat_key:
            body["prompt_cache_key"] = turn.chat_key
        if not self.compatible and self.cache_ttl == "1h" and facts.cache_retention_24h:
            body["prompt_cache_retention"] = "24h"
        return body

    def stream(self, turn: Turn, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        body = self.body(turn)
        usage = Usage()
        stopped = (StreamEvent("usage", usage=usage), StreamEvent("stop", stop_reason="cancelled"))
        try:  # interrupt: a stop does not wait for a silent server (headers, or the next chunk)
            stream = interrupt.call(lambda: self._create(body), cancel)
        except interrupt.Interrupted:
            yield from stopped
            return
        except Exception as exc:
            err = self._error(exc)
            if err.kind == "bad_request" and "tool" in str(err).lower() and "tools" in body:
                # A local model without tool calling: answer from retrieval alone.
                self.supports_tools = False
                body.pop("tools")
                try:
                    stream = interrupt.call(lambda: self._create(body), cancel)
                except interrupt.Interrupted:
                    yield from stopped
                    return
                except Exception as exc2:
                    yield StreamEvent("error", error=self._error(exc2))
                    return
            else:
                yield StreamEvent("error", error=err)
                return
        calls: dict[int, dict] = {}
        finish = ""
        chunks = interrupt.read(stream, cancel)
        try:
            for chunk in chunks:
                if cancel is not None and cancel.is_set():
                    chunks.close()  # the reader closes the stream
                    yield from stopped
                    return
                if chunk.usage is not None:
                    usage.input = chunk.usage.prompt_tokens or 0
                    usage.output = chunk.usage.completion_tokens or 0
                    details = getattr(chunk.usage, "prompt_tokens_details", None)
                    usage.cache_read = (getattr(details, "cached_tokens", 0) or 0) if details else 0
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                delta = choice.delta
                if delta is not None and delta.content:
                    yield StreamEvent("text", text=delta.content)
                for tc in (delta.tool_calls or []) if delta is not None else []:
                    slot = calls.setdefault(tc.index, {"id": "", "name": "", "json": ""})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["json"] += tc.function.arguments or ""
                if choice.finish_reason:
                    finish = choice.finish_reason
        except interrupt.Interrupted:  # stopped while the server was silent
            yield from stopped
            return
        except Exception as exc:
            yield StreamEvent("usage", usage=usage)
            yield StreamEvent("error", error=self._error(exc, mid_stream=True))
            return
        for index in sorted(calls):
            slot = calls[index]
            raw = slot["json"] or "{}"
            try:
                args = json.loads(raw)
                if not isinstance(args, dict):
                    raise ValueError("not an object")
                yield StreamEvent("tool_call", tool_call=ToolCall(slot["id"], slot["name"], args, raw))
            except ValueError as exc:
                yield StreamEvent("tool_call", tool_call=ToolCall(
                    slot["id"], slot["name"], None, raw, f"arguments are not a JSON object: {exc}"))
        yield StreamEvent("usage", usage=usage)
        if not finish:
            yield StreamEvent("error", error=ProviderError(
                "The connection was cut mid-reply; the partial reply is kept, marked incomplete.", kind="cut"))
            return
        yield StreamEvent("stop", stop_reason={"stop": "end_turn", "tool_calls": "tool_use",
                                               "length": "max_tokens"}.get(finish, finish))

    def _create(self, body: dict):
        body = dict(body)
        extra = {}
        for name in ("prompt_cache_key", "prompt_cache_retention"):
            if name in body:
                extra[name] = body.pop(name)
        return self.client.chat.completions.create(**body, stream=True, extra_body=extra or None)

    def _error(self, exc: Exception, mid_stream: bool = False) -> ProviderError:
        err = translate(exc, "openai", self.facts.model if self.local else self.model, self.base_url, MAX_RETRIES,
                        None if (self.base_url and not self.remote) else "OPENAI_API_KEY", api_key=self._api_key,
                        label=self.label)
        if mid_stream and err.kind == "timeout":
            return ProviderError(f"{self.label[0].upper()}{self.label[1:]} stopped sending mid-reply and did not answer in "
                                 f"time ({self.base_url or 'OpenAI'}); "
                                 "the partial reply is kept, marked incomplete.", kind="timeout", retryable=True)
        if mid_stream and err.kind in ("error", "connection"):
            return ProviderError("The connection was cut mid-reply; the partial reply is kept, marked incomplete "
                                 f"({type(exc).__name__}).", kind="cut")
        return err
