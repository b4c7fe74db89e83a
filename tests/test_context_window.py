"""The context-window policy (core/chat/window.py) against a local server that refuses a prompt
longer than its window (``FakeOpenAI(compatible=True, context_window=4096)``: llama.cpp started with
``-c 4096``, the window the model table gives a local model): a request the server would refuse for
its length is never sent. Each test fails without its part of the policy."""

from __future__ import annotations

import json

import pytest

from chat_support import KEY, config, new_chat, searcher, send  # noqa: F401 (fixture)
from core.providers.models import LOCAL_CONTEXT_WINDOW

MODEL = "llama3.2"


@pytest.fixture
def local():
    from fakes import FakeOpenAI

    with FakeOpenAI(compatible=True, context_window=LOCAL_CONTEXT_WINDOW) as srv:
        yield srv
    assert srv.errors == []


def local_provider(srv):
    from core.providers.openai_provider import OpenAIProvider

    p = OpenAIProvider(KEY, MODEL, base_url=srv.base_url)
    assert p.facts.provider == "local" and p.facts.context_window == LOCAL_CONTEXT_WINDOW
    return p


def refusals(srv) -> int:
    """Requests the server refused for their length (none may be sent)."""
    return sum(1 for r in srv.requests if r.status >= 400)


def notices(events) -> list[str]:
    return [e.text for e in events if e.type == "notice"]


def words(n_chars: int, seed: str = "note") -> str:
    text = " ".join(f"{seed}{i}" for i in range(n_chars // 6 + 1))
    return text[:n_chars]


def test_a_huge_getNodesById_result_is_capped_and_the_turn_completes(store, searcher, local):
    from fakes import text, tool_call

    ids = [store.add_node(f"Long note {i}", words(20_000, f"w{i}x"))["id"] for i in range(5)]
    chat = new_chat(store, local_provider(local), searcher, agent="easy")
    local.script.add(tool_call("getNodesById", {"ids": ids}))
    local.script.add(text("Read them all."))
    events = send(chat, "Read my long notes")
    reply = chat.last_reply
    assert reply.status == "complete" and reply.error is None, reply.error
    assert reply.text == "Read them all."
    assert len(local.requests) == 2 and refusals(local) == 0
    sent = [m for m in local.requests[1].body["messages"] if m["role"] == "tool"][0]["content"]
    assert "characters to fit the context window]" in sent and len(sent) < 20_000
    assert any("Cut 1 tool result" in n for n in notices(events))
    # Stored as sent: the next turn's history carries the capped result, not 100,000 characters.
    stored = [b for r in chat.repo.rows(chat.id) for b in json.loads(r["content"]) if b.get("type") == "tool_result"]
    assert stored[0]["content"] == sent
    local.script.add(text("Still here."))
    send(chat, "And now?")
    assert chat.last_reply.status == "complete" and refusals(local) == 0


def test_a_long_history_is_summarised_to_fit(store, searcher, local):
    from fakes import text

    chat = new_chat(store, local_provider(local), searcher, agent="easy")
    for i in range(10):  # ~3,000 tokens of history: under the summary threshold, over a 4,096 window
        chat._insert("user", [{"type": "text", "text": f"Question {i}: " + words(540, f"q{i}x")}])
        chat._insert("assistant", [{"type": "text", "text": f"Answer {i}: " + words(540, f"a{i}x")}])
    local.script.add(text("## Decisions\nnone\n## Open questions\nnone"))  # the summary request
    local.script.add(text("Continuing."))
    events = send(chat, "What did we decide?")
    assert chat.last_reply.status == "complete", chat.last_reply.error
    assert len(local.requests) == 2 and refusals(local) == 0
    assert chat.metadata.get("summary", "").startswith("## Decisions")
    last = json.dumps(local.requests[1].body)
    assert "[Summary of the earlier conversation]" in last and "Question 0:" not in last and "Question 9:" in last
    assert any("Summarised the older conversation" in n for n in notices(events))
    assert chat.last_reply.side_usage.get("summary") is not None


def test_retrieved_passages_are_dropped_last_first(store, searcher, local, monkeypatch):
    from fakes import text
    from core.providers.request import Passage

    ids = [store.add_node(f"Passage note {i}", "x")["id"] for i in range(6)]
    chat = new_chat(store, local_provider(local), searcher, agent="easy")
    passages = [Passage(i + 1, ids[i], f"Passage note {i}", [], f"P{i + 1}START " + words(2_000, f"p{i}x"), 0.9)
                for i in range(6)]  # ~3,000 tokens of passages
    monkeypatch.setattr(chat.engine, "retrieve", lambda message, now=None: list(passages))
    local.script.add(text("From the first passages [1]."))
    events = send(chat, "Tell me about the passages")
    assert chat.last_reply.status == "complete", chat.last_reply.error
    assert len(local.requests) == 1 and refusals(local) == 0
    body = json.dumps(local.requests[0].body)
    kept = [n for n in range(1, 7) if f"P{n}START" in body]
    assert kept and kept == list(range(1, len(kept) + 1)) and len(kept) < 6  # the last ones went first
    dropped = 6 - len(kept)
    assert any(f"Left out {dropped} retrieved passage" in n for n in notices(events))
    sent = chat.repo.sent(chat.repo.rows(chat.id)[0]["id"])  # the suffix stored is the one sent
    assert set(sent["passages"]) == {str(n) for n in kept}
    assert chat.last_reply.citations["passages"] == {str(n): ids[n - 1] for n in kept}


def test_a_message_too_long_alone_is_refused_and_nothing_is_sent(store, searcher, local):
    from core.chat.window import TooLong

    chat = new_chat(store, local_provider(local), searcher, agent="easy")
    with pytest.raises(TooLong) as err:
        send(chat, words(20_000, "long"))
    assert str(err.value).startswith(f"Your message alone is about 5,000 tokens; {chat.provider.model} takes at most 3,072 with "
                                     "room for the reply."), str(err.value)
    assert local.requests == []  # the fake's request count did not move
    assert chat.repo.rows(chat.id) == []  # and the message is not stored


def test_the_estimate_is_corrected_by_the_reported_usage():
    from core.chat.window import Calibration

    c = Calibration.from_metadata({})
    assert c.ratio == 1.0
    c.record(estimated=1000, reported=1250)
    meta: dict = {}
    c.save(meta)
    assert Calibration.from_metadata(meta).ratio == 1.25
    c.record(estimated=1000, reported=0)  # a request that reported nothing changes nothing
    assert c.ratio == 1.25
    low = Calibration(500, 1000)
    assert low.ratio == 1.0  # an over-estimate stays as a margin


# -- what the user is told: `cairn ask` (the app's chat pane shows the same notice as an activity line)
@pytest.fixture
def ask(cairn_cmd, cli_env, local):
    from pathlib import Path

    env = {k: v for k, v in cli_env.items() if not k.endswith(("_API_KEY", "_BASE_URL", "_PROXY", "_proxy"))}
    env.update(OPENAI_API_KEY=KEY, OPENAI_BASE_URL=local.base_url)
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    Path(env["CAIRN_HOME"]).mkdir(parents=True, exist_ok=True)

    def run(*args):
        import subprocess

        proc = subprocess.run([*cairn_cmd, "ask", *map(str, args), "--provider", "openai", "--model", MODEL],
                              env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()

    return run, env


def test_cairn_ask_refuses_a_too_long_message_with_the_sizes_and_sends_nothing(ask, local):
    from pathlib import Path

    from core.graph.store import Store

    run, env = ask
    rc, out, err = run(words(20_000, "long"))
    assert rc != 0
    assert f"Your message alone is about 5,000 tokens; {MODEL} takes at most 3,072 with room for the reply." in err, err
    assert local.requests == []
    with Store(Path(env["CAIRN_HOME"]) / "cairn.db", readonly=True) as store:  # and no empty chat is left
        assert store.db.execute("SELECT COUNT(*) FROM chats").fetchone()[0] == 0


def test_cairn_ask_says_what_was_cut(ask, local):
    from pathlib import Path

    from core.graph.store import Store
    from fakes import text, tool_call

    run, env = ask
    with Store(Path(env["CAIRN_HOME"]) / "cairn.db") as store:
        ids = [store.add_node(f"Long note {i}", words(20_000, f"w{i}x"))["id"] for i in range(3)]
    local.script.add(tool_call("getNodesById", {"ids": ids}))
    local.script.add(text("Read them."))
    rc, out, err = run("Read my long notes")
    assert rc == 0, err
    assert "Read them." in out
    assert "[Cut 1 tool result of this turn to fit" in err and refusals(local) == 0


async def test_the_chat_pane_shows_what_was_cut(store, db_path, local, monkeypatch, embedder):
    import core.index.embedder
    from fakes import text, tool_call
    from test_tui_chat import SIZE, RecordingApp, metas, plain, type_and_send

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", local.base_url)
    # One note is enough to pass the 4,096-token window (the app indexes it at start and waits for that
    # at exit, so every extra note here is paid in embedding time).
    ids = [store.add_node("Long note", words(20_000, "w0x"))["id"]]
    local.script.add(tool_call("getNodesById", {"ids": ids}))
    local.script.add(text("Read them."))
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.services.config.chat.provider = "openai"
        app.services.config.chat.model = MODEL
        await type_and_send(pilot, app, "Read my long notes")
        from tui_support import wait_for

        await wait_for(pilot, lambda: metas(app), what="the reply")
        assert " · complete" in metas(app)[-1]
        activity = plain(app.query(".reply-activity").last())
        assert "✂ Cut 1 tool result of this turn to fit" in activity
    assert refusals(local) == 0


def test_an_older_pasted_document_is_cut_to_fit_the_summary_request(store, searcher, local):
    """The rolling summary's own request fits the window: a 40,000-character message among the older
    ones is cut (its head kept, the cut said), so the summary is made instead of refused."""
    from fakes import text

    chat = new_chat(store, local_provider(local), searcher, agent="easy")
    chat._insert("user", [{"type": "text", "text": "Here is the report: " + words(40_000, "doc")}])
    chat._insert("assistant", [{"type": "text", "text": "Noted."}])
    for i in range(5):
        chat._insert("user", [{"type": "text", "text": f"Question {i}"}])
        chat._insert("assistant", [{"type": "text", "text": f"Answer {i}"}])
    local.script.add(text("## Decisions\nthe report was shared"))
    assert chat._maybe_summarise(force=True) is not None
    assert refusals(local) == 0 and len(local.requests) == 1
    sent = json.dumps(local.requests[0].body)
    assert "Here is the report: doc0" in sent and "characters to fit the context window]" in sent
    assert chat.metadata["summary"] == "## Decisions\nthe report was shared" and "summary_error" not in chat.metadata


def test_a_side_request_too_long_for_the_window_is_not_sent(store, local):
    from core.chat import model_reply

    with pytest.raises(model_reply.ReplyFailed) as err:
        model_reply.complete(local_provider(local), "Judge these.", words(20_000, "cited"), chat_key="k",
                             max_tokens=1024)
    assert str(err.value).startswith("This request would be about 5,0") and str(err.value).endswith(
        f"{MODEL} takes at most 3,072 with room for a 1,024-token reply. Nothing was sent.")
    assert err.value.kind == "context_window" and local.requests == []


def test_the_preview_says_what_the_window_policy_would_do(store, searcher, local):
    """The Context viewer and `cairn context` show the policy's prediction: fits, what it would cut, or
    that it would not be sent, without summarising or sending anything."""
    from core.chat.preview import next_request

    cfg = config(provider="openai", agent="easy")
    provider = local_provider(local)
    fits = next_request(store, cfg, provider, "hello", searcher=searcher).window("hello")
    assert fits.line.endswith(": fits") and fits.limit == 3_072 and fits.window == LOCAL_CONTEXT_WINDOW
    assert fits.line.startswith(f"context window: ~{fits.size:,} of 3,072 tokens (the model's 4,096")
    long = words(20_000, "long")
    refused = next_request(store, cfg, provider, long, searcher=searcher).window(long)
    assert refused.refusal.startswith("Your message alone is about 5,000 tokens") and "would not be sent" in refused.line
    chat = new_chat(store, provider, searcher, agent="easy")
    for i in range(10):
        chat._insert("user", [{"type": "text", "text": f"Question {i}: " + words(600, f"q{i}x")}])
        chat._insert("assistant", [{"type": "text", "text": f"Answer {i}: " + words(600, f"a{i}x")}])
    summarise = next_request(store, cfg, provider, "And?", chat_id=chat.id, searcher=searcher).window("And?")
    assert summarise.cuts and summarise.cuts[0].startswith("summarise the older conversation")
    assert summarise.as_dict()["cuts"] == list(summarise.cuts) and summarise.as_dict()["refusal"] is None
    assert local.requests == [] and "summary" not in chat.metadata  # nothing was sent or summarised
