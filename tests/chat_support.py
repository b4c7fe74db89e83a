"""Helpers shared by the chat / context / provider tests (not a test module).

Everything runs against the real SDKs and the fake servers on 127.0.0.1, on a real SQLite file.
"""

from __future__ import annotations

import copy
import json
import socket
from datetime import datetime, timezone

import pytest

SONNET = "claude-sonnet-4-6"  # the default model; caches from 2,048 tokens (core/providers/models.py)
SONNET_1024 = "claude-sonnet-5"  # caches from 1,024 tokens: for a test whose prefix is shorter than 2,048 (4-5: retired)
GPT = "gpt-4.1-mini"
KEY = "sk-test-KEY-d41d8cd98f00b204"  # a key that must never be stored or logged
FIXED_NOW = datetime(2026, 3, 4, 5, 6, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def searcher(store, embedder):
    from core.search.searcher import Searcher

    return Searcher(store, embedder)


@pytest.fixture
def anth():
    from fakes import FakeAnthropic

    with FakeAnthropic() as srv:
        yield srv
    assert srv.errors == []


@pytest.fixture
def oai():
    from fakes import FakeOpenAI

    with FakeOpenAI() as srv:
        yield srv
    assert srv.errors == []


def config(**chat):
    from core.config import ChatSettings, Config

    cfg = Config()
    cfg.chat = ChatSettings(**chat)
    return cfg


def anthropic_provider(srv, *, remote: bool | None = None, key: str = KEY, cache_ttl: str = "5m",
                       model: str = SONNET):
    from core.providers.anthropic_provider import AnthropicProvider

    p = AnthropicProvider(key, model, base_url=srv.base_url, cache_ttl=cache_ttl)
    if remote is not None:
        # The fakes listen on loopback, which Cairn rightly counts as local; a test that needs a
        # remote provider says so explicitly.
        p.remote = remote
    return p


def openai_provider(srv, *, remote: bool | None = None, key: str = KEY, model: str = GPT,
                    compatible: bool | None = None):
    """compatible=False: the fake plays OpenAI itself (its model names served), else a compatible server."""
    from core.providers.openai_provider import OpenAIProvider

    p = OpenAIProvider(key, model, base_url=srv.base_url, compatible=compatible)
    if remote is not None:
        p.remote = remote
    return p


def new_chat(store, provider, searcher, *, cfg=None, **kw):
    from core.chat.conversation import Chat

    kw.setdefault("now", lambda: FIXED_NOW)
    return Chat(store, cfg or config(), provider, searcher=searcher, **kw)


def send(chat, message: str, cancel=None) -> list:
    """Run one turn to its end; returns the streamed events."""
    return list(chat.send(message, cancel))


def strip_cc(value):
    """A copy without cache_control markers (markers are not content)."""
    value = copy.deepcopy(value)

    def walk(v):
        if isinstance(v, dict):
            v.pop("cache_control", None)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return value


def cache_control_paths(body: dict) -> list[str]:
    """Where the cache_control markers sit, as readable paths (system[i], messages[i].content[j], tools[i])."""
    out = []
    for i, t in enumerate(body.get("tools") or []):
        if "cache_control" in t:
            out.append(f"tools[{i}]")
    system = body.get("system")
    if isinstance(system, list):
        for i, b in enumerate(system):
            if "cache_control" in b:
                out.append(f"system[{i}]")
    for i, m in enumerate(body["messages"]):
        if isinstance(m["content"], list):
            for j, b in enumerate(m["content"]):
                if "cache_control" in b:
                    out.append(f"messages[{i}].content[{j}]")
    return out


def closed_port() -> int:
    """A local port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dump_db(path) -> str:
    """Every value of every row of every table, as text (for 'never stored' checks)."""
    import sqlean as sqlite

    conn = sqlite.connect(str(path))
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'vec_%' AND name NOT LIKE '%fts%'")]
        parts = []
        for t in tables:
            for row in conn.execute(f'SELECT * FROM "{t}"'):
                parts.append(json.dumps([v if not isinstance(v, bytes) else v.hex() for v in row], default=str))
        return "\n".join(parts)
    finally:
        conn.close()


def raw_bodies(srv) -> str:
    return "\n".join(r.raw.decode("utf-8") for r in srv.requests)


def unfenced(content: str):
    """A tool result's JSON, inside its fence when its text came from outside (core/chat/fence.py)."""
    from core.chat.fence import unwrap

    return json.loads(unwrap(content)[0])
