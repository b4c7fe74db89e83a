"""Issue 25: a local model on a small window (llama.cpp started with `-c 2048`, as SmolLM2 servers often
are) is first-class. The request fits the window it is given: the fixed part shrinks in a stated order
(skills catalogue, tools, hub lines) and says so; tools a chat template drops are neither sent nor
counted; the server's own tokenizer sizes the prompt; a long chat keeps going by folding its history;
a refusal names the part that does not fit; the probe sends the user's key; names are true.

Real OpenAI SDK and OpenAIProvider against FakeOpenAI(compatible=True, context_window=2048) on
127.0.0.1, a fake that refuses (400) any prompt longer than its window, as llama.cpp does; a hostile
model fake calls a tool it was not offered."""

from __future__ import annotations

import pytest

from chat_support import KEY, new_chat, searcher, send  # noqa: F401 (fixture)
from core.chat.window import TooLong

WINDOW = 2048


def provider(srv, model: str = "gpt-4.1-mini", key: str = KEY):
    from core.providers.openai_provider import OpenAIProvider

    return OpenAIProvider(key, model, base_url=srv.base_url)


def refused(srv) -> int:
    return sum(1 for r in srv.requests if r.status >= 400)


def notices(events) -> list[str]:
    return [e.text for e in events if e.type == "notice"]


@pytest.fixture
def reservoir(store):
    """A note that answers the question, hubs (the orchestrator's background) and a graph around them."""
    note = store.add_node("Reservoir", "The Vyrnwy reservoir was built between 1881 and 1888 to supply Liverpool.")
    others = [store.add_node(f"Hub {i}", f"A well connected note number {i} about dams and water.")
              for i in range(12)]
    for i, hub in enumerate(others):
        store.add_edge(hub["id"], note["id"], f"Hub {i} mentions the reservoir.")
        store.add_edge(others[(i + 1) % len(others)]["id"], hub["id"], "next hub")
    return note


def test_the_default_agent_answers_a_plain_question_on_a_2048_token_window(store, searcher, reservoir):
    from fakes import FakeOpenAI, text

    with FakeOpenAI(compatible=True, context_window=WINDOW) as srv:
        chat = new_chat(store, provider(srv), searcher)  # the orchestrator: tools, skills, hubs
        srv.script.add(text("It was built between 1881 and 1888 [1]."))
        events = send(chat, "When was the reservoir built?")
        body = srv.requests[-1].body
    reply = chat.last_reply
    assert reply.status == "complete", reply.error
    assert refused(srv) == 0 and len(srv.requests) == 1
    said = " ".join(notices(events))
    assert "Left out" in said and "context window" in said, said
    assert "1881" in body["messages"][-1]["content"]  # the passage that answers stayed
    assert body["max_tokens"] <= WINDOW - srv.requests[-1].usage["prompt_tokens"] + 64


def test_a_tool_the_request_left_out_is_not_run_when_a_model_calls_it(store, searcher, reservoir):
    """A hostile model calls updateNode though the request offered no tools: nothing is changed."""
    from fakes import FakeOpenAI, text, tool_call

    with FakeOpenAI(compatible=True, context_window=WINDOW) as srv:
        chat = new_chat(store, provider(srv), searcher)
        srv.script.add(tool_call("updateNode", {"id": reservoir["id"], "source": "Built in 2020."}))
        srv.script.add(text("Done."))
        send(chat, "When was the reservoir built?")
        offered = {t["function"]["name"] for t in srv.requests[0].body.get("tools", [])}
    assert "updateNode" not in offered
    assert store.get_node(reservoir["id"])["source"].startswith("The Vyrnwy reservoir was built between 1881")


def test_tools_a_chat_template_drops_are_neither_sent_nor_counted(store, searcher, reservoir):
    from fakes import FakeOpenAI, text

    with FakeOpenAI(compatible=True, context_window=WINDOW, template_tools=False) as srv:
        p = provider(srv)
        assert p.supports_tools is False
        chat = new_chat(store, p, searcher)
        srv.script.add(text("1881 to 1888."))
        events = send(chat, "When was the reservoir built?")
    assert "tools" not in srv.requests[-1].body
    assert not any("tool" in n for n in notices(events))  # nothing to leave out: they were never there
    assert chat.last_reply.status == "complete"


def test_the_servers_own_token_count_sizes_the_prompt(store, searcher):
    """The estimate (4 characters a token of the JSON body: quotes and line breaks count twice) of a long
    message is over the window; the server's tokenizer (POST /tokenize) says it fits, and it is sent
    whole. (The fake counts as its usage does; a real tokenizer differs more: tests/test_llama_real.py.)"""
    from core.chat import window
    from core.providers.base import Turn
    from fakes import FakeOpenAI, text

    long_message = 'say "x"\n' * 420  # 3,780 characters: 945 tokens counted, ~1,260 estimated as JSON
    with FakeOpenAI(compatible=True, context_window=WINDOW, tokenize=True, template_tools=False) as srv:
        p = provider(srv)
        chat = new_chat(store, p, searcher, agent="worker")
        turn = Turn(chat.request(long_message), [], chat.chat_key)
        counted = p.prompt_tokens(turn)
        assert counted is not None and counted < window.raw_estimate(p, turn)
        srv.script.add(text("Noted."))
        send(chat, long_message)
        assert any(probe.path == "/tokenize" for probe in srv.probes)
    assert refused(srv) == 0 and chat.last_reply.status == "complete"
    assert srv.requests[-1].body["messages"][-1]["content"].startswith(long_message.strip())


def test_a_ten_turn_chat_of_240_token_messages_answers_every_turn(store, searcher):
    from fakes import FakeOpenAI, text

    with FakeOpenAI(compatible=True, context_window=WINDOW) as srv:
        chat = new_chat(store, provider(srv), searcher, agent="worker")
        for turn in range(10):
            message = f"Turn {turn}: " + " ".join(f"word{turn}x{i}" for i in range(120))  # ~240 tokens
            srv.responder = lambda body, turn=turn: [text(
                "## Decisions\nnone" if "summary" in str(body.get("prompt_cache_key", "")) else
                f"Answer {turn}: " + "fine " * 150)]
            send(chat, message)
            assert chat.last_reply.status == "complete", (turn, chat.last_reply.error)
    assert refused(srv) == 0


def test_a_message_too_long_on_its_own_is_the_only_refusal_and_says_so(store, searcher):
    from fakes import FakeOpenAI

    with FakeOpenAI(compatible=True, context_window=WINDOW) as srv:
        chat = new_chat(store, provider(srv), searcher, agent="worker")
        with pytest.raises(TooLong) as err:
            send(chat, "word " * 3000)
    assert str(err.value).startswith("Your message alone is about 3,")
    assert srv.requests == []


def test_the_probe_sends_the_users_key_and_names_what_answered(store, searcher):
    from fakes import FakeOpenAI

    with FakeOpenAI(compatible=True, context_window=WINDOW, api_key="sk-local-secret") as srv:
        facts = provider(srv, key="sk-local-secret").facts
        assert facts.context_window == WINDOW and facts.window_source == "server (llama.cpp /props)"
        assert all(p.headers.get("authorization") == "Bearer sk-local-secret" for p in srv.probes
                   if p.path.startswith("/props"))
    with FakeOpenAI(compatible=True, context_window=WINDOW, api_key="sk-local-secret") as srv:
        wrong = provider(srv, key="sk-wrong").facts
    assert wrong.window_source == "assumed"  # a 401 is no answer: assumed, and the UI says so


def test_the_model_shown_is_the_one_the_server_serves_and_errors_name_the_local_server(store, searcher):
    from fakes import FakeOpenAI
    from fakes._base import HttpError

    with FakeOpenAI(compatible=True, context_window=WINDOW, served="smollm2-135m") as srv:
        p = provider(srv, model="gpt-4.1-mini")
        assert p.facts.model == "smollm2-135m"
        chat = new_chat(store, p, searcher, agent="worker")
        assert store.db.execute("SELECT model FROM chats WHERE id = ?", (chat.id,)).fetchone()[0] == "smollm2-135m"
        with pytest.raises(TooLong) as err:
            send(chat, "word " * 3000)
        assert "smollm2-135m takes at most" in str(err.value) and "gpt-4.1" not in str(err.value)
        for _ in range(3):  # the SDK retries twice
            srv.script.add(HttpError(500))
        send(chat, "hello")
        port = srv.port
    assert chat.last_reply.error.startswith(f"The local server at 127.0.0.1:{port} had a server error (500)")


def test_a_local_servers_own_counts_lower_the_estimate_an_apis_never_do(store):
    """The usage of earlier replies corrects the estimate: a local server's prompt_tokens are its own
    tokenizer's count, so an over-estimate is corrected down (to half at most); an API's never is."""
    from core.chat.window import Calibration
    from core.providers.openai_provider import OpenAIProvider
    from fakes import FakeOpenAI

    seen = Calibration()
    seen.record(1848, 639)  # SmolLM2 on llama.cpp: Cairn's estimate against the server's count
    with FakeOpenAI(compatible=True, context_window=WINDOW) as srv:
        assert seen.ratio_for(provider(srv)) == 0.5
        closer = Calibration(900, 1000)
        assert closer.ratio_for(provider(srv)) == 0.9
    assert seen.ratio_for(OpenAIProvider(KEY, "gpt-4.1-mini")) == 1.0
