"""A chat's tool history survives a crash: a tool-loop step's `tool_use` and `tool_result` rows are
written in one transaction (a kill or a failed write between them leaves neither), and a history that
already holds an unanswered `tool_use` (an older version, any crash) is repaired before it is sent,
the repair stored so what is sent stays byte-stable. Against the fake servers, which refuse an
unpaired history with the real APIs' 400s (tests/fakes: tool_pairing_error, tool_message_error)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chat_support import (  # noqa: F401
    KEY,
    SONNET,
    _no_proxies,
    anth,
    anthropic_provider,
    new_chat,
    oai,
    openai_provider,
    searcher,
    send,
    strip_cc,
)
from core.chat import conversation
from fakes import text, tool_call

ROOT = Path(__file__).resolve().parents[1]


def stored(store, chat_id: int) -> list[tuple[str, list[dict]]]:
    return [(r["role"], json.loads(r["content"])) for r in store.db.execute(
        "SELECT role, content FROM messages WHERE chat_id = ? ORDER BY id", (chat_id,)).fetchall()]


def unanswered(messages: list[tuple[str, list[dict]]]) -> list[str]:
    """The ids of stored tool_use blocks not answered in the very next stored message."""
    out = []
    for k, (role, content) in enumerate(messages):
        if role != "assistant":
            continue
        answered = ({b.get("tool_use_id") for b in messages[k + 1][1] if b.get("type") == "tool_result"}
                    if k + 1 < len(messages) and messages[k + 1][0] == "user" else set())
        out += [b["id"] for b in content if b.get("type") == "tool_use" and b["id"] not in answered]
    return out


def plant(store, chat_id: int, *messages: tuple[str, list[dict]]) -> None:
    """Rows written directly, as an older version or a crash left them."""
    with store.db.transaction() as conn:
        for role, content in messages:
            conn.execute("INSERT INTO messages(chat_id, role, content, status, created_at) VALUES (?, ?, ?, 'complete', 'x')",
                         (chat_id, role, json.dumps(content)))


def user(t: str) -> tuple[str, list[dict]]:
    return "user", [{"type": "text", "text": t}]


def assistant_calling(call_id: str, say: str = "Let me look.") -> tuple[str, list[dict]]:
    return "assistant", [{"type": "text", "text": say},
                         {"type": "tool_use", "id": call_id, "name": "queryNodes", "input": {"limit": 1}}]


def repair_of(call_id: str) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": conversation.INTERRUPTED, "is_error": True}


# -- 1. the two rows of a step are written together --------------------------------------------------------
KILLED_TURN = textwrap.dedent("""
    import os, sys
    sys.path[:0] = [{root!r}, {tests!r}]
    from core.chat.conversation import Chat
    from core.config import Config
    from core.graph.store import Store
    from core.providers.anthropic_provider import AnthropicProvider

    store = Store({db!r})
    # The process dies as the tool_result row is written: a kill between the step's two writes.
    store.db.conn.create_function("die_here", 0, lambda: os._exit(9))
    store.db.conn.execute("CREATE TEMP TRIGGER die BEFORE INSERT ON messages"
                          " WHEN NEW.content LIKE '[{{\\"type\\": \\"tool_result\\"%' BEGIN SELECT die_here(); END")
    chat = Chat(store, Config(), AnthropicProvider({key!r}, {model!r}, base_url={url!r}), chat_id={chat_id})
    for _ in chat.send("Which notes mention otters?"):
        pass
    print("the turn ended without the kill")
""")


def test_a_kill_between_the_two_writes_of_a_step_leaves_neither_and_the_chat_goes_on(store, db_path, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    before = stored(store, chat.id)
    anth.script.add(tool_call("queryNodes", {"limit": 1}, id="toolu_killed"))
    script = KILLED_TURN.format(root=str(ROOT), tests=str(ROOT / "tests"), db=str(db_path), key=KEY, model=SONNET,
                                url=anth.base_url, chat_id=chat.id)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 9, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert len(anth.requests) == 1  # the request went out, the model called the tool, the tool ran
    after = stored(store, chat.id)
    # both rows of the step or neither: here neither (the kill came before the commit)
    assert not any(b.get("type") in ("tool_use", "tool_result") for _, c in after for b in c), after
    assert after == before + [user("Which notes mention otters?")]
    # the chat goes on, against a server that refuses an unpaired history
    anth.script.add(text("No notes mention otters."))
    send(chat, "And now?")
    assert anth.last.status == 200 and chat.last_reply.status == "complete", chat.last_reply.error


def test_a_failed_second_write_rolls_the_whole_step_back(store, searcher, anth):
    """The result row's write fails (a lock timeout, a full disk): the call's row goes with it."""
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(tool_call("queryNodes", {"limit": 1}, id="toolu_failed"))

    def locked():
        raise RuntimeError("database is locked")

    store.db.conn.create_function("fail_here", 0, locked)
    store.db.conn.execute("CREATE TEMP TRIGGER fail BEFORE INSERT ON messages"
                          " WHEN NEW.content LIKE '[{\"type\": \"tool_result\"%' BEGIN SELECT fail_here(); END")
    with pytest.raises(Exception):
        send(chat, "Which notes mention otters?")
    store.db.conn.execute("DROP TRIGGER fail")
    assert not store.db.conn.in_transaction
    messages = stored(store, chat.id)
    assert messages == [user("Which notes mention otters?")], messages  # neither row of the step
    anth.script.add(text("None do."))
    send(chat, "And now?")
    assert chat.last_reply.status == "complete", chat.last_reply.error


# -- 2. a history with an unanswered call is repaired, and the repair is stored ----------------------------
@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_an_unanswered_call_at_the_end_is_answered_stored_and_sent_the_same_from_then_on(store, searcher, anth,
                                                                                        oai, kind):
    srv = anth if kind == "anthropic" else oai
    provider = anthropic_provider(anth) if kind == "anthropic" else openai_provider(oai)
    chat = new_chat(store, provider, searcher)
    plant(store, chat.id, user("Which notes mention otters?"), assistant_calling("toolu_planted"))
    srv.script.add(text("Sorry, that search was cut off."))
    send(chat, "Did you find them?")
    assert srv.last.status == 200 and chat.last_reply.status == "complete", chat.last_reply.error
    messages = stored(store, chat.id)
    assert messages[2] == ("user", [repair_of("toolu_planted")])  # stored right after the call
    assert messages[3] == user("Did you find them?") and unanswered(messages) == []
    first = srv.last.body["messages"]
    srv.script.add(text("Still none."))
    send(chat, "Try again?")
    second = srv.last.body["messages"]
    # byte-stable: the next request repeats the earlier one's history exactly (the suffix aside)
    n = len(first) - 1
    assert strip_cc(second[:n]) == strip_cc(first[:n])
    assert len(stored(store, chat.id)) == len(messages) + 2  # nothing repaired twice


def test_an_unanswered_call_before_later_turns_is_answered_at_the_head_of_the_next_user_message(store, searcher,
                                                                                               anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    plant(store, chat.id, user("Which notes mention otters?"), assistant_calling("toolu_old"),
          user("Hello?"), ("assistant", [{"type": "text", "text": "Anthropic refused the request (400)."}]))
    anth.script.add(text("Here I am."))
    send(chat, "Are you there?")
    assert anth.last.status == 200 and chat.last_reply.status == "complete", chat.last_reply.error
    messages = stored(store, chat.id)
    assert messages[2] == ("user", [repair_of("toolu_old"), {"type": "text", "text": "Hello?"}])
    assert unanswered(messages) == []
    sent = strip_cc(anth.last.body["messages"])
    assert sent[2]["content"][0] == repair_of("toolu_old")
    # the repaired message still reads as the user's text
    assert [m["text"] for m in chat.messages() if m["role"] == "user"][:2] == ["Which notes mention otters?", "Hello?"]


def test_an_unanswered_call_followed_by_a_reply_is_rewritten_as_text(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    plant(store, chat.id, user("Which notes mention otters?"), assistant_calling("toolu_lost", say=""),
          ("assistant", [{"type": "text", "text": "None, it seems."}]))
    anth.script.add(text("Right."))
    send(chat, "OK")
    assert anth.last.status == 200 and chat.last_reply.status == "complete", chat.last_reply.error
    messages = stored(store, chat.id)
    assert messages[1] == ("assistant", [{"type": "text", "text": ""},
                                         {"type": "text", "text": f"[queryNodes call: {conversation.INTERRUPTED}]"}])
    assert unanswered(messages) == []


def test_a_result_whose_call_is_missing_is_not_sent(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    plant(store, chat.id, user("Hi"), ("assistant", [{"type": "text", "text": "Hello."}]),
          ("user", [{"type": "tool_result", "tool_use_id": "toolu_gone", "content": "[]"}]),
          ("user", [{"type": "tool_result", "tool_use_id": "toolu_gone2", "content": "[]"},
                    {"type": "text", "text": "Anything on otters?"}]),
          ("assistant", [{"type": "text", "text": "Nothing."}]))
    anth.script.add(text("Still nothing."))
    send(chat, "Sure?")
    assert anth.last.status == 200 and chat.last_reply.status == "complete", chat.last_reply.error
    sent = json.dumps(anth.last.body["messages"])
    assert "toolu_gone" not in sent and "Anything on otters?" in sent
