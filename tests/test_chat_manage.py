"""Chats to manage (core/chat/manage.py, `cairn chats ACTION`, `cairn ask --again`, the chat list's keys
and the chat pane's regenerate and edit-last): rename, trash and restore, search across every message,
export as markdown or as a node, and sending the last message again."""

from __future__ import annotations

import json

import pytest

from core import config as config_module
from core.chat import manage
from core.chat.conversation import Chat
from core.chat.repository import ChatRepository
from core.errors import InvalidInput, NotFound
from core.providers.offline import OfflineProvider
from tui.cli.main import main


def offline_chat(store, *messages: str) -> Chat:
    chat = Chat(store, config_module.Config(), OfflineProvider())
    for message in messages:
        list(chat.send(message))
    return chat


def shown_texts(chat: Chat) -> list[tuple[str, str]]:
    return [(m["role"], m["text"].split("\n")[0]) for m in chat.messages()]


def test_rename_trims_and_refuses_empty_long_or_trashed(store):
    chat = offline_chat(store, "about espresso")
    assert manage.rename(store, chat.id, "  Coffee \n talk ")["title"] == "Coffee talk"
    with pytest.raises(InvalidInput, match="must not be empty"):
        manage.rename(store, chat.id, "   ")
    with pytest.raises(InvalidInput, match="at most 200"):
        manage.rename(store, chat.id, "x" * 201)
    with pytest.raises(NotFound):
        manage.rename(store, 999, "x")
    with pytest.raises(InvalidInput, match="NUL"):
        manage.rename(store, chat.id, "bad\x00title")
    manage.delete(store, chat.id)
    with pytest.raises(InvalidInput, match="in the trash"):
        manage.rename(store, chat.id, "again")


def test_a_trashed_chat_leaves_the_list_and_the_search_and_comes_back(store):
    store.add_node("Espresso", "18 g in, 36 g out.")
    kept = offline_chat(store, "espresso ratio please")
    gone = offline_chat(store, "espresso grind please")
    manage.delete(store, gone.id)
    repo = ChatRepository(store)
    assert [c["id"] for c in repo.list_chats()] == [kept.id]
    assert [h["chat_id"] for h in manage.search(store, "grind")] == []
    assert [c["id"] for c in manage.trash(store)] == [gone.id]
    with pytest.raises(InvalidInput, match="restore it first"):
        Chat(store, config_module.Config(), OfflineProvider(), chat_id=gone.id)
    with pytest.raises(InvalidInput, match="not in the trash"):
        manage.restore(store, kept.id)
    manage.restore(store, gone.id)
    assert {c["id"] for c in repo.list_chats()} == {kept.id, gone.id}
    assert [h["chat_id"] for h in manage.search(store, "grind")] == [gone.id]


def test_search_finds_words_in_any_message_best_hit_per_chat_with_a_snippet(store):
    first = offline_chat(store, "What is the burr grinder setting?", "And for filter coffee?")
    second = offline_chat(store, "Tell me about sourdough starters")
    manage.rename(store, second.id, "Bread notes")
    hits = manage.search(store, "grinder")
    assert [h["chat_id"] for h in hits] == [first.id]
    assert f"{manage.HIT_START}grinder{manage.HIT_END}" in hits[0]["snippet"]
    assert [h["chat_id"] for h in manage.search(store, "starter*")] == [second.id]  # the Nodes query syntax
    assert [h["chat_id"] for h in manage.search(store, "bread")] == [second.id]  # by its title alone
    assert manage.search(store, "coffee -filter") == []  # the only message with coffee also says filter
    with pytest.raises(InvalidInput, match="Nothing to search for"):
        manage.search(store, "-only")


def test_markdown_and_node_exports(store):
    chat = offline_chat(store, "What about espresso?")
    manage.rename(store, chat.id, "Coffee")
    text = manage.markdown(store, chat.id)
    assert text.startswith("# Coffee\n") and "## You\n\nWhat about espresso?" in text and "## Assistant" in text
    node, new = manage.export_node(store, chat.id)
    assert new and node["title"] == "Chat: Coffee" and node["dimensions"] == ["chat"] and node["source"] == text
    assert node["metadata"]["chat_id"] == chat.id
    list(chat.send("And the grind?"))
    store.update_node(node["id"], title="My coffee chat")
    again, new = manage.export_node(store, chat.id)  # saved again: the same node, its text up to date
    assert not new and again["id"] == node["id"] and "And the grind?" in again["source"]
    assert again["title"] == "My coffee chat"


def test_the_search_index_is_built_for_chats_written_before_it(tmp_path, monkeypatch):
    import core.graph.db
    from core.graph.migrations import MIGRATIONS
    from core.graph.store import Store

    path = tmp_path / "v5.db"
    monkeypatch.setattr(core.graph.db, "MIGRATIONS", MIGRATIONS[:5])
    with Store(path) as old:
        old.db.execute("INSERT INTO chats(title, created_at, updated_at) VALUES ('old', 'x', 'x')")
        old.db.execute("INSERT INTO messages(chat_id, role, content, created_at) VALUES (1, 'user', ?, 'x')",
                       (json.dumps([{"type": "text", "text": "the kettle descaling schedule"}]),))
    monkeypatch.undo()
    with Store(path) as new:
        assert [h["chat_id"] for h in manage.search(new, "descaling")] == [1]


# -- sending again ---------------------------------------------------------------------------------------
def test_again_replaces_the_last_turn_and_keeps_its_tokens_counted(store):
    chat = offline_chat(store, "first question", "second question")
    list(chat.send("second question, better", again=True))
    assert [t for r, t in shown_texts(chat) if r == "user"] == ["first question", "second question, better"]
    assert [m["content"][0]["text"] for m in chat.history() if m["role"] == "user"][-1] == "second question, better"
    statuses = [r[0] for r in store.db.execute("SELECT status FROM messages WHERE chat_id = ? ORDER BY id",
                                               (chat.id,))]
    assert statuses.count("superseded") == 2  # the old message and its reply, kept
    listed = next(c for c in ChatRepository(store).list_chats() if c["id"] == chat.id)
    assert listed["replies"] == 2  # the replies in the chat now, not the one replaced
    assert manage.search(store, "better") and not [h for h in manage.search(store, '"second question"')
                                                   if h["snippet"].count("better") == 0]
    assert chat.last_message()[1] == "second question, better"


def test_again_with_nothing_sent_is_refused(store):
    chat = Chat(store, config_module.Config(), OfflineProvider())
    with pytest.raises(InvalidInput, match="no message of yours"):
        list(chat.send("hello", again=True))


def test_a_refused_send_again_leaves_the_last_turn_as_it_was(store, monkeypatch):
    from core.chat import window

    chat = offline_chat(store, "first question")
    before = shown_texts(chat)

    def refuse(*args, **kwargs):
        raise InvalidInput("too long for the window (simulated)")

    monkeypatch.setattr(window, "fit", refuse)
    with pytest.raises(InvalidInput, match="simulated"):
        list(chat.send("replacement", again=True))
    assert shown_texts(chat) == before  # nothing superseded before the replacement was stored


# -- the CLI ---------------------------------------------------------------------------------------------
def cli(capsys, db_path, *argv):
    rc = main([*argv, "--db", str(db_path)])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_cli_chats_actions(capsys, db_path, store, tmp_path):
    chat = offline_chat(store, "What about the burr grinder?")
    assert cli(capsys, db_path, "chats", "rename", str(chat.id), "Grinders")[0] == 0
    rc, out, _ = cli(capsys, db_path, "chats", "search", "burr")
    assert rc == 0 and "Grinders" in out and "burr" in out
    rc, out, _ = cli(capsys, db_path, "chats", "show", str(chat.id))
    assert rc == 0 and out.startswith("# Grinders")
    target = tmp_path / "chat.md"
    assert cli(capsys, db_path, "chats", "export", str(chat.id), "-o", str(target))[0] == 0
    assert target.read_text().startswith("# Grinders")
    rc, _, err = cli(capsys, db_path, "chats", "export", str(chat.id), "-o", str(target))
    assert rc == 1 and "--force" in err
    rc, out, _ = cli(capsys, db_path, "chats", "export", str(chat.id), "--as-node", "--json")
    assert rc == 0 and json.loads(out)["dimensions"] == ["chat"]
    assert cli(capsys, db_path, "chats", "rm", str(chat.id))[0] == 0
    rc, out, _ = cli(capsys, db_path, "chats", "trash")
    assert "Grinders" in out
    rc, out, _ = cli(capsys, db_path, "chats", "--json")
    assert json.loads(out) == []
    assert cli(capsys, db_path, "chats", "restore", str(chat.id))[0] == 0
    rc, out, _ = cli(capsys, db_path, "chats", "--json")
    assert [c["id"] for c in json.loads(out)] == [chat.id]


@pytest.mark.parametrize("argv, message", [
    (("chats", "rename", "1"), "usage: cairn chats rename ID TITLE"),
    (("chats", "rm"), "usage: cairn chats rm ID"),
    (("chats", "rm", "one"), "'one' is not a chat id"),
    (("chats", "rm", "42"), "There is no chat 42"),
    (("chats", "search", "-", "-"), "Nothing to search for"),
    (("ask", "--again"), "say which chat with --chat ID"),
    (("ask",), "Give the message"),
])
def test_cli_chats_errors_are_specific(capsys, db_path, store, argv, message):
    rc, _, err = cli(capsys, db_path, *argv)
    assert rc in (1, 2) and message in err and "Traceback" not in err


def test_cli_ask_again_regenerates_or_edits_the_last_message(capsys, db_path, store):
    chat = offline_chat(store, "first", "second")
    rc, out, _ = cli(capsys, db_path, "ask", "--chat", str(chat.id), "--again", "--json")
    assert rc == 0 and json.loads(out)["chat_id"] == chat.id
    rc, out, _ = cli(capsys, db_path, "ask", "--chat", str(chat.id), "--again", "second, edited", "--json")
    assert rc == 0
    users = [m["text"] for m in ChatRepository(store).messages(chat.id) if m["role"] == "user"]
    assert users == ["first", "second, edited"]


# -- the app ---------------------------------------------------------------------------------------------
async def test_ctrl_r_regenerates_and_up_edits_the_last_message(store, db_path):
    from tui.app import CairnApp
    from tui.widgets.chat_pane import ChatInput, ChatLog, ChatPane
    from tui_support import settle, wait_for

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        chat_pane, _ = await app.right_panes()
        await pilot.press("ctrl+l")
        chat_input = app.query_one(ChatInput)
        chat_input.text = "first question"
        await pilot.press("ctrl+j")
        await wait_for(pilot, lambda: not chat_pane._streaming and chat_pane.chat_id is not None, what="the reply")
        await settle(app, pilot)
        chat_id = chat_pane.chat_id
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: not chat_pane._streaming, what="the regenerated reply")
        await settle(app, pilot)
        log = app.query_one(ChatLog)
        assert len([w for w in log.children if w.has_class("user-message")]) == 1
        await pilot.press("up")  # the input is empty: the last message comes back to edit
        assert chat_input.text == "first question" and chat_pane._editing_last
        chat_input.text = "first question, sharper"
        await pilot.press("ctrl+j")
        await wait_for(pilot, lambda: not chat_pane._streaming, what="the reply to the edit")
        await settle(app, pilot)
        users = [m["text"] for m in ChatRepository(store).messages(chat_id) if m["role"] == "user"]
        assert users == ["first question, sharper"]
        assert [str(w.render()) for w in log.children if w.has_class("user-message")] == ["first question, sharper"]
        assert chat_pane.chat_id == chat_id


async def test_the_chat_list_finds_by_message_text_renames_and_trashes(store, db_path):
    from textual.widgets import Input

    from tui.app import CairnApp
    from tui.screens.chat_list import ChatListScreen
    from tui_support import settle, wait_for

    grind = offline_chat(store, "What about the burr grinder?")
    other = offline_chat(store, "Something else entirely")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.right_panes()
        app.push_screen(ChatListScreen(app.services))
        await wait_for(pilot, lambda: isinstance(app.screen, ChatListScreen) and len(app.screen.chats) == 2,
                       what="the chat list")
        screen = app.screen
        screen.query_one("#chat-list-filter", Input).value = "burr"
        await wait_for(pilot, lambda: [c["id"] for c in screen.shown] == [grind.id] and screen.found,
                       what="the chat found by its message")
        await pilot.press("ctrl+r")
        box = screen.query_one("#chat-list-rename", Input)
        assert box.display and box.value.startswith("What about")
        box.value = "Grinders"
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.renaming is None, what="the rename")
        assert ChatRepository(store).load_chat(grind.id)["title"] == "Grinders"
        await pilot.press("f8")
        await wait_for(pilot, lambda: grind.id not in [c["id"] for c in screen.chats], what="the chat trashed")
        assert [c["id"] for c in manage.trash(store)] == [grind.id]
        assert [c["id"] for c in ChatRepository(store).list_chats()] == [other.id]
        await settle(app, pilot)


async def test_sending_in_a_chat_trashed_elsewhere_says_so_plainly(store, db_path):
    from tui.app import CairnApp
    from tui.widgets.chat_pane import ChatInput, ChatPane
    from tui_support import settle, wait_for

    chat = offline_chat(store, "first question")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        chat_pane, _ = await app.right_panes()
        chat_pane.load_chat(chat.id)
        await wait_for(pilot, lambda: chat_pane.chat_id == chat.id, what="the chat")
        manage.delete(store, chat.id)  # from the command line, meanwhile
        await pilot.press("ctrl+l")
        app.query_one(ChatInput).text = "second question"
        await pilot.press("ctrl+j")
        await wait_for(pilot, lambda: not chat_pane._streaming, what="the refusal")
        errors = [str(w.render()) for w in chat_pane.query(".chat-error")]
        assert errors and "is in the trash" in errors[-1] and "InvalidInput" not in errors[-1]
        await settle(app, pilot)
