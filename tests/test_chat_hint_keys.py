"""The chat's intro and its input's hint (issue 26 walkthrough over SSH): at 130x40 the hint was cut
to 'Ask about your notes… (ctrl+j or alt+enter' (no closing words); with send_message remapped in
[keymap] the footer said '^s Send' while the intro and the hint still said ctrl+j or alt+enter."""

from __future__ import annotations

import pytest

from core.config import Config
from tui.app import CairnApp
from tui.services import Services
from tui.widgets.chat_pane import ChatInput
from tui_support import wait_for


@pytest.fixture(autouse=True)
def _no_background_work(monkeypatch):
    """Not under test: indexing, and the database watcher (as in tests/test_tui_chat.py)."""
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    monkeypatch.setattr(CairnApp, "watch_database", lambda self: None)


def intro(app) -> str:
    return str(app.query_one(".chat-intro").render())


@pytest.mark.parametrize("size", [(80, 24), (130, 40)])
async def test_the_input_hint_is_whole_in_the_chat_pane(store, db_path, size):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.query(ChatInput), what="the chat pane mounted")
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: app.query_one(ChatInput).content_region.width, what="the chat input shown")
        await pilot.pause()
        chat_input = app.query_one(ChatInput)
        assert chat_input.placeholder.startswith("Ask about your notes…")
        assert len(chat_input.placeholder) < chat_input.content_region.width, chat_input.placeholder
        assert "ctrl+j" in chat_input.placeholder  # room for the send key at both sizes


async def test_the_intro_and_the_hint_name_the_keys_of_the_keymap(store, db_path):
    config = Config(keymap={"send_message": "ctrl+s", "chat_list": "f9"})
    app = CairnApp(db_path, services=Services(db_path, config=config), first_run_prompt=False)
    async with app.run_test(size=(130, 40)) as pilot:
        await wait_for(pilot, lambda: app.query(".chat-intro"), what="the chat's intro")
        await pilot.press("ctrl+l")
        await pilot.pause()
        text = intro(app)
        assert "ctrl+s sends" in text and "f9 earlier chats" in text, text
        assert "ctrl+j" not in text and "ctrl+o" not in text, text
        assert "(ctrl+s sends)" in app.query_one(ChatInput).placeholder
        assert "esc stops a reply" in text and "f5 new chat" in text and "f2 context" in text
