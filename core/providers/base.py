"""The one event type every provider streams, normalised usage, and provider errors."""

from __future__ import annotations

import copy
import dataclasses
import threading
from urllib.parse import urlparse
from dataclasses import dataclass, field
from typing import Iterator

from core.errors import CairnError
from core.providers import models
from core.providers.request import ContextRequest


class ProviderError(CairnError):
    """A provider failed; `kind` says how (auth, rate_limit, server, connection, cut, ...)."""

    def __init__(self, message: str, kind: str = "error", retryable: bool = False):
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


@dataclass
class Usage:
    """Tokens of one request. `input` counts every prompt token, cached or not (Anthropic reports
    the three parts separately; OpenAI's cached_tokens is a part of prompt_tokens)."""

    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0
    cache_write_1h: int = 0  # the part of cache_write written for one hour (Anthropic reports the split)

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The counts' names, as stored (messages.usage, sent_log.usage)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_dict(cls, stored: dict | None) -> "Usage":
        """A stored usage (as_dict's keys; a count it lacks is 0)."""
        stored = stored or {}
        return cls(*(int(stored.get(name, 0) or 0) for name in cls.fields()))

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(*(getattr(self, name) + getattr(other, name) for name in self.fields()))

    def as_dict(self) -> dict:
        out = {"input": self.input, "output": self.output, "cache_write": self.cache_write,
               "cache_read": self.cache_read}
        if self.cache_write_1h:
            out["cache_write_1h"] = self.cache_write_1h
        return out


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict | None  # None when the model sent arguments that are not valid JSON
    raw_arguments: str = ""
    error: str | None = None


@dataclass
class StreamEvent:
    """type: "text" (text), "tool_call" (tool_call), "usage" (usage), "stop" (stop_reason),
    "error" (error: a ProviderError; the reply so far is kept). Chat.send adds "tool_result" and
    "phase" (text: what starts next, e.g. "citation_check") and "notice" (text: one line for the user,
    e.g. what the context-window policy of core/chat/window.py cut); a consumer ignores types it does
    not know."""

    type: str
    text: str = ""
    tool_call: ToolCall | None = None
    usage: Usage | None = None
    stop_reason: str = ""
    error: ProviderError | None = None


@dataclass
class Turn:
    """What a provider needs for one request: the neutral request and this turn's tool-loop messages."""

    request: ContextRequest
    loop: list[dict] = field(default_factory=list)  # assistant tool_use / user tool_result messages
    chat_key: str = ""
    max_tokens: int = 4096


class Provider:
    name = "provider"
    remote = True
    supports_tools = True
    # Whether the vendor's own model names are served (the "easy" agent's cheaper sibling, CHEAP_MODELS):
    # a compatible server (Ollama, llama.cpp, a router) serves its own names and answers 404 to others.
    serves_vendor_models = True

    def __init__(self, model: str = ""):
        self.model = model

    def with_model(self, model: str | None) -> "Provider":
        """This provider (same kind, key, server and settings) on `model`; itself when `model` is None
        or already its model (an agent's own model, core/chat/request.py `model_for`)."""
        if not model or model == self.model or self.name == "offline":
            return self
        other = copy.copy(self)
        other.model = model
        return other

    @property
    def facts(self):
        """The model table's row for this model (core/providers/models.py)."""
        return models.facts(self.model, self.name)

    @property
    def shown_model(self) -> str:
        """The model's name as the user should read it (a local server's own name for what it serves)."""
        return self.model

    def body(self, turn: Turn) -> dict:
        """The exact request body this provider would send (for `cairn context` and the viewer)."""
        raise NotImplementedError

    def stream(self, turn: Turn, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        raise NotImplementedError


class SDKProvider(Provider):
    """A provider reached through its vendor SDK over HTTP: the key, the server, the timeout, and the
    SDK client made on first use (importing an SDK costs ~1 s, so nothing imports it before a request)."""

    def __init__(self, api_key: str, model: str, *, base_url: str | None = None, timeout: float | None = None):
        super().__init__(model)
        self._api_key = api_key
        self.base_url = base_url
        self.timeout = timeout  # seconds of silence before giving up (None: the SDK's default)
        self.remote = not (base_url and is_loopback(base_url))
        self._client = None

    @property
    def client(self):
        if self._client is None:
            options = {} if self.timeout is None else {"timeout": self.timeout}
            self._client = self._new_client(**options)
        return self._client

    def _new_client(self, **options):
        """The SDK client for this key and server (`options`: the SDK's own, e.g. timeout)."""
        raise NotImplementedError


def is_loopback(url: str) -> bool:
    """Whether a server's base URL is on this machine: only such a provider counts as local. The host
    must be an IP literal in 127.0.0.0/8 or ::1, or the name `localhost`; any other name is remote, since
    it resolves wherever DNS says (`127.0.0.1.nip.io`, `127.attacker.example` are names, not addresses)."""
    import ipaddress

    try:
        host = (urlparse(url).hostname or "").lower()
    except ValueError:  # a malformed address ("http://[::1") is not this machine
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
