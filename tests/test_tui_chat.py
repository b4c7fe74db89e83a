"""The chat pane, the Settings / Context viewer, F1 help and the list of earlier chats, driven with
Pilot on a real database: the offline provider, the real Anthropic SDK against the fake server, and a
provider that holds its reply open until the user stops it."""

from __future__ import annotations

import html
import json
import re

import pytest
from rich.text import Text

from chat_support import KEY, _no_proxies  # noqa: F401  (autouse fixture: no proxies)
from core.chat.focus import Focus
from core.providers.base import Provider, StreamEvent, Usage
from tui.app import CairnApp
from tui.messages import FocusChanged, OpenNode
from tui.widgets.chat_pane import ChatInput, ChatLog, ChatPane, SourceList
from tui.widgets.context_viewer import ContextViewer
from tui_support import wait_for

SIZE = (160, 48)


class RecordingApp(CairnApp):
    """The real app, also recording the nodes the chat asks to open and what it copies."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.opened: list[int] = []
        self.copied: list[str] = []

    def watch_database(self) -> None:
        """Not under test here: the watcher would refresh the other panes on every chat write (and
        races the end of a short test)."""

    def on_open_node(self, message: OpenNode) -> None:
        self.opened.append(message.node_id)

    def copy_to_clipboard(self, text: str) -> None:
        self.copied.append(text)
        super().copy_to_clipboard(text)


class GatedProvider(Provider):
    """Streams a first piece of text, then waits until the user stops the reply (or 10 s pass)."""

    name = "gated"
    remote = False
    supports_tools = False

    def __init__(self):
        super().__init__("gated-model")

    def stream(self, turn, cancel=None):
        yield StreamEvent("text", text="Partial answer so far")
        if cancel is not None and cancel.wait(10):
            yield StreamEvent("usage", usage=Usage(input=10, output=4))
            yield StreamEvent("stop", stop_reason="cancelled")
            return
        yield StreamEvent("text", text=" and the rest.")
        yield StreamEvent("usage", usage=Usage(input=10, output=8))
        yield StreamEvent("stop", stop_reason="end_turn")


@pytest.fixture(autouse=True)
def _one_embedder(embedder, monkeypatch):
    """The app's workers use the shared embedder: make it the session's (loaded once)."""
    import core.index.embedder

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)


@pytest.fixture
def notes(store, indexer):
    sourdough = store.add_node("Sourdough starter", "Feed the sourdough starter with flour and water every day "
                               "and keep it warm so the yeast stays active.")
    tomatoes = store.add_node("Tomato plants", "Tomato plants need full sun, regular water and support stakes.")
    indexer.run()
    return {"sourdough": sourdough["id"], "tomatoes": tomatoes["id"]}



def plain(widget) -> str:
    content = widget.content
    return content.plain if isinstance(content, Text) else str(content)


async def type_and_send(pilot, app, text: str, key: str = "ctrl+j") -> ChatPane:
    pane, _ = await app.right_panes()  # mounted after the first frame: wait for it, not for a pause
    await pilot.press("ctrl+l")
    app.query_one(ChatInput).insert(text)
    await pilot.press(key)
    return pane


def screen_text(app) -> str:
    """What the terminal shows, as text (from the SVG screenshot)."""
    return html.unescape(re.sub(r"<[^>]+>", "", app.export_screenshot())).replace("\xa0", " ")


def metas(app) -> list[str]:
    return [plain(w) for w in app.query(".reply-meta")]


def errors(app) -> list[str]:
    return [plain(w) for w in app.query(".chat-error")]


# -- chat --------------------------------------------------------------------------------------------------
async def test_offline_answer_is_cited_and_a_source_opens_its_node(notes, db_path):
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+l")
        for ch in "sourdough":
            await pilot.press(ch)
        await pilot.press("ctrl+j")
        await wait_for(pilot, lambda: app.query(SourceList), what="the sources list")
        pane = app.query_one(ChatPane)
        reply = pane.query(".reply").last()
        assert "Offline answer" in reply.source
        assert f"(cairn:node/{notes['sourdough']})" in reply.source  # [1] became a link to the node
        sources = app.query_one(SourceList)
        labels = [str(o.prompt) for o in sources.options]
        assert labels[0] == "[1] Sourdough starter"
        assert metas(app) and metas(app)[-1].endswith("· complete · no price")  # offline: nothing billed
        assert pane.query_one(ChatInput).text == ""

        sources.focus()
        sources.highlighted = 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.opened, what="OpenNode")
        assert app.opened == [notes["sourdough"]]

        app.query_one(ChatLog).focus()
        await pilot.press("c")
        assert app.copied and "Sourdough starter" in app.copied[-1]


async def test_offline_answer_in_the_app_says_where_to_choose_a_provider(notes, db_path):
    """Issue 26: inside the app the offline answer pointed to `cairn ask --help`; it says what to do here."""
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        pane = await type_and_send(pilot, app, "sourdough")
        await wait_for(pilot, lambda: app.query(SourceList) and not pane.streaming, what="the offline answer")
        first = pane.query(".reply").last().source.splitlines()[0]
        assert "Offline answer" in first and "cairn" not in first and "--help" not in first
        assert "f2" in first and "Provider" in first and "Save as defaults" in first
        # ... and what it names is there: f2 shows the settings, with a Provider choice and the Save button.
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)
        await wait_for(pilot, lambda: viewer.display and viewer.query("#viewer-provider"), what="the settings")
        assert str(viewer.query_one("#viewer-save").label) == "Save as defaults"


async def test_anthropic_reply_streams_with_usage_and_alt_enter_sends(notes, db_path, monkeypatch):
    from fakes import FakeAnthropic, text

    with FakeAnthropic() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        srv.script.add(text("Hello from the fake model, streamed in several pieces.", deltas=6))
        app = RecordingApp(db_path, first_run_prompt=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.services.config.chat.provider = "anthropic"
            await type_and_send(pilot, app, "Say hello", key="alt+enter")
            await wait_for(pilot, lambda: metas(app), what="the usage line")
            pane = app.query_one(ChatPane)
            assert pane.query(".reply").last().source == "Hello from the fake model, streamed in several pieces."
            meta = metas(app)[-1]
            assert meta.startswith("in ") and "cache read" in meta and "· out " in meta and " · complete · $" in meta
            assert "claude-sonnet-4-6" in str(app.query_one("#right").border_title)
            assert not errors(app)
        assert srv.errors == []
        bodies = [r.body for r in srv.model_requests()]
        assert bodies and bodies[-1]["stream"] is True
        assert KEY not in json.dumps(bodies)


async def test_escape_stops_a_slow_reply_and_keeps_it_incomplete(notes, db_path, store, monkeypatch):
    from fakes import FakeAnthropic, slow, text

    with FakeAnthropic() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        srv.script.add(slow(1.5), text("This reply should never be shown. " * 20, deltas=40))
        app = RecordingApp(db_path, first_run_prompt=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.services.config.chat.provider = "anthropic"
            pane = await type_and_send(pilot, app, "Tell me a long story")
            assert pane.streaming
            await pilot.press("escape")
            await wait_for(pilot, lambda: metas(app), what="the reply to end")
            assert "incomplete" in metas(app)[-1]
            assert not pane.streaming
    row = store.db.execute("SELECT status FROM messages WHERE role = 'assistant' ORDER BY id DESC").fetchone()
    assert row["status"] == "incomplete"


async def test_partial_reply_is_kept_and_alt_enter_never_stops(notes, db_path, store):
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        pane, _ = await app.right_panes()
        pane.make_provider = lambda cfg: GatedProvider()
        await type_and_send(pilot, app, "Explain the starter")
        await wait_for(pilot, lambda: "Partial answer" in pane.query(".reply").last().source, what="the first text")

        await pilot.press("alt+enter")  # alt+enter while streaming: a send attempt, never a stop
        assert not pane.stop_pending and pane.streaming
        await pilot.press("escape", "enter")  # ESC + CR split by a slow SSH link: alt+enter again
        assert not pane.stop_pending and pane.streaming
        assert pane.query_one(ChatInput).text == ""  # and no newline was inserted

        await pilot.press("escape")
        assert pane.stop_pending
        await wait_for(pilot, lambda: metas(app), what="the stopped reply")
        assert " · incomplete (stopped) · " in metas(app)[-1]
        assert pane.query(".reply").last().source == "Partial answer so far"
    row = store.db.execute("SELECT content, status FROM messages WHERE role = 'assistant' ORDER BY id DESC").fetchone()
    assert row["status"] == "incomplete"
    assert json.loads(row["content"])[0]["text"] == "Partial answer so far"


async def test_model_edits_need_confirmation_and_created_nodes_are_listed(notes, db_path, store, monkeypatch):
    from fakes import FakeAnthropic, text, tool_call

    from tui.screens.confirm import ConfirmScreen

    with FakeAnthropic() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        srv.script.add(tool_call("createEdge", {"from_id": notes["sourdough"], "to_id": notes["tomatoes"],
                                                "explanation": "Both live in the kitchen garden."}),
                       tool_call("createNode", {"title": "Bread notes"}))
        srv.script.add(text("Linked them and started a note."))
        app = RecordingApp(db_path, first_run_prompt=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.services.config.chat.provider = "anthropic"
            await type_and_send(pilot, app, "Link sourdough to tomatoes and start a bread note")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
            await pilot.press("y")
            await wait_for(pilot, lambda: metas(app), what="the reply")
            assert " · complete · $" in metas(app)[-1]
            activity = plain(app.query(".reply-activity").last())
            assert "→ createEdge" in activity and "→ createNode" in activity
            labels = [str(o.prompt) for o in app.query(SourceList).last().options]
            assert "+ Bread notes (created by the model)" in labels
        assert srv.errors == []
    edges = store.edges(notes["sourdough"])
    assert [e["explanation"] for e in edges] == ["Both live in the kitchen garden."]


async def test_a_fetch_the_user_did_not_write_is_asked_with_the_whole_address(notes, db_path, store, monkeypatch):
    """The egress rule in the app (core/agent/egress.py): the dialog shows the whole address, query string
    included, at 80 columns too; a no means the server hears nothing."""
    import http.server
    import threading

    from fakes import FakeAnthropic, text, tool_call
    from tui.screens.confirm import ConfirmScreen

    hits = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            self.send_error(404)

        def log_message(self, *args):
            pass

    page = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    secret = "d=" + "sourdough-starter-secret-" * 80 + "END"  # 2,000 characters
    url = f"http://127.0.0.1:{page.server_address[1]}/c?{secret}"
    try:
        with FakeAnthropic() as srv:
            monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
            monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
            srv.script.add(tool_call("captureUrl", {"url": url}))
            srv.script.add(text("I could not fetch it."))
            app = RecordingApp(db_path, first_run_prompt=False)
            async with app.run_test(size=(80, 24)) as pilot:
                await pilot.pause()
                app.services.config.chat.provider = "anthropic"
                app.services.config.capture.local_addresses = True
                await type_and_send(pilot, app, "What do I know about sourdough?")
                await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
                shown = "".join(plain(w) for w in app.screen.query("#confirm-detail Static"))
                assert shown == url  # whole: nothing cut, the query string included
                question = plain(app.screen.query_one("#confirm-question"))
                assert "from 127.0.0.1, at an address you did not write" in question
                for button in ("#confirm-yes", "#confirm-no"):  # the answers stay on the screen at 80x24
                    region = app.screen.query_one(button).region
                    assert region.height > 0 and region.bottom <= 24 and region.right <= 80, (button, region)
                await pilot.press("n")
                await wait_for(pilot, lambda: metas(app), what="the reply")
            assert srv.errors == []
            result = srv.requests[-1].body["messages"][-1]["content"][0]
            assert result["is_error"] and "did not allow fetching" in result["content"]
    finally:
        page.shutdown()
        page.server_close()
    assert hits == []


async def test_ctrl_z_moves_the_notes_the_model_created_to_the_trash(notes, db_path, store, monkeypatch):
    from fakes import FakeAnthropic, text, tool_call

    with FakeAnthropic() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        srv.script.add(tool_call("createNode", {"title": "Bread notes"}),
                       tool_call("createNode", {"title": "Rye [bold]notes[/bold]"}))
        srv.script.add(text("Started two notes."))
        srv.script.add(text("Nothing new this time."))  # a later reply that creates nothing
        app = RecordingApp(db_path, first_run_prompt=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.services.config.chat.provider = "anthropic"
            pane, _ = await app.right_panes()
            assert not pane.undo_armed and "ctrl+z" not in [k.key for k in app.screen.query("FooterKey")]
            await type_and_send(pilot, app, "Start a bread note and a rye note")
            await wait_for(pilot, lambda: metas(app), what="the reply")
            created = [r["id"] for r in store.db.execute(
                "SELECT id FROM nodes WHERE title IN ('Bread notes', 'Rye [bold]notes[/bold]') ORDER BY id")]
            assert len(created) == 2
            sources = app.query(SourceList).last()
            assert "+ Bread notes (created by the model)" in [str(o.prompt) for o in sources.options]
            await type_and_send(pilot, app, "Anything else?")
            await wait_for(pilot, lambda: len(metas(app)) == 2, what="the second reply")

            # in the input with text in it, ctrl+z undoes typing, never the notes
            chat_input = pane.query_one(ChatInput)
            await pilot.press(*"abc")
            await pilot.press("ctrl+z")
            await pilot.pause()
            assert chat_input.text != "abc" and len(store.get_nodes(created)) == 2
            chat_input.clear()
            await pilot.pause()
            assert "ctrl+z" in [k.key for k in app.screen.query("FooterKey")]

            await pilot.press("ctrl+z")  # the empty input: the latest reply that created notes
            await wait_for(pilot, lambda: any("Moved 2 notes to the trash" in n.message
                                              for n in app._notifications), what="the undo")
            notice = [n.message for n in app._notifications if "Moved" in n.message][-1]
            assert notice.startswith("Moved 2 notes to the trash (cairn restore ID brings one back)")
            assert store.get_nodes(created) == []
            assert {t["node_id"] for t in store.trash()} >= set(created)
            labels = [str(o.prompt) for o in sources.options]
            assert "+ Bread notes (created by the model) · undone, in the trash" in labels
            assert "+ Rye [bold]notes[/bold] (created by the model) · undone, in the trash" in labels
            assert all(o.disabled for o in sources.options if "undone" in str(o.prompt))

            await pilot.press("ctrl+z")
            await wait_for(pilot, lambda: any("Nothing left to undo" in n.message for n in app._notifications),
                           what="nothing left to undo")
            assert len(store.trash()) == 2
        assert srv.errors == []


async def test_missing_key_is_shown_inline_and_the_message_is_kept(db_path, store):
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.services.config.chat.provider = "anthropic"
        pane = await type_and_send(pilot, app, "hello there")
        await wait_for(pilot, lambda: errors(app), what="the inline error")
        assert "ANTHROPIC_API_KEY" in errors(app)[-1]
        assert not pane.streaming
        assert pane.query_one(ChatInput).text == "hello there"  # nothing was sent: the draft is back
        await pilot.press("ctrl+l", "!")  # typing goes on at the end of the returned draft
        assert pane.query_one(ChatInput).text == "hello there!"
    assert store.db.execute("SELECT COUNT(*) FROM chats").fetchone()[0] == 0


async def test_connection_refused_is_shown_inline(db_path, monkeypatch):
    from chat_support import closed_port

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.services.config.chat.provider = "anthropic"
        await type_and_send(pilot, app, "anyone there?")
        await wait_for(pilot, lambda: errors(app), timeout=30, what="the inline error")
        assert "connect" in errors(app)[-1].lower()
        assert " · incomplete · " in metas(app)[-1]


async def test_chat_list_resumes_an_earlier_chat(notes, db_path, store, embedder):
    from core.chat.conversation import Chat
    from core.config import Config
    from core.providers.offline import OfflineProvider
    from core.search.searcher import Searcher

    earlier = Chat(store, Config(), OfflineProvider(), searcher=Searcher(store, embedder))
    list(earlier.send("what about tomato plants"))
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+l")
        await pilot.press("ctrl+o")
        from tui.screens.chat_list import ChatListScreen

        await wait_for(pilot, lambda: isinstance(app.screen, ChatListScreen) and app.screen.shown, what="the chats")
        await pilot.press("enter")
        pane = app.query_one(ChatPane)
        await wait_for(pilot, lambda: pane.chat_id == earlier.id and app.query(SourceList), what="the resumed chat")
        assert [plain(w) for w in app.query(".user-message")] == ["what about tomato plants"]
        assert "Tomato plants" in pane.query(".reply").last().source
        assert [str(o.prompt) for o in app.query_one(SourceList).options][0] == "[1] Tomato plants"

        await type_and_send(pilot, app, "and sourdough?")
        await wait_for(pilot, lambda: len(metas(app)) == 2, what="the next reply")
        assert pane.chat_id == earlier.id

        await pilot.press("f5")  # a new chat
        assert pane.chat_id is None and not app.query(".user-message")
    count = store.db.execute("SELECT COUNT(*) FROM messages WHERE chat_id = ?", (earlier.id,)).fetchone()[0]
    assert count == 4


async def test_a_chat_keeps_its_first_message_as_its_title(notes, db_path, store):
    """Each message in the pane opens the chat anew (a worker's Chat): the second must not retitle it,
    in the pane or in the list of earlier chats."""
    from tui.screens.chat_list import ChatListScreen

    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        pane = await type_and_send(pilot, app, "tomato plants in the sun")
        await wait_for(pilot, lambda: len(metas(app)) == 1 and not pane.streaming, what="the first reply")
        await type_and_send(pilot, app, "and sourdough?")
        await wait_for(pilot, lambda: len(metas(app)) == 2 and not pane.streaming, what="the second reply")
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatListScreen) and app.screen.shown, what="the chats")
        assert [c["title"] for c in app.screen.shown] == ["tomato plants in the sun"]
    assert store.db.execute("SELECT title FROM chats").fetchone()[0] == "tomato plants in the sun"


async def test_the_chat_list_wraps_a_chats_facts_under_its_title_at_80x24(notes, db_path, store):
    """A chat's facts (id, replies, agent, model, time, tokens, price) wrap between parts, each line indented
    under the title, never a fragment such as "out 0" at the left edge."""
    from tui.screens.chat_list import ChatListScreen

    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        pane = await type_and_send(pilot, app, "tomato plants in the sun")
        await wait_for(pilot, lambda: len(metas(app)) == 1 and not pane.streaming, what="the reply")
        store.db.execute("UPDATE chats SET model = 'claude-sonnet-4-6'")  # as long as a real model's name
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatListScreen) and app.screen.shown, what="the chats")
        await pilot.pause()
        from textual.widgets import OptionList

        options = app.screen.query_one("#chat-list-options", OptionList)
        room = options.scrollable_content_region.width - 2  # an option's text width (its padding is 1 + 1)
        prompt = options.get_option_at_index(0).prompt
        title, *facts = prompt.plain.splitlines()
        assert title == "tomato plants in the sun" and len(facts) >= 2  # the facts did not fit one line
        assert all(line.startswith("  #1 · 1 reply") or line.startswith("  ") for line in facts)
        assert all(len(line) <= room for line in facts), (room, facts)  # the list never wraps them itself
        assert "in 0 out 0" in " ".join(facts) and "claude-sonnet-4-6" in " ".join(facts)
        assert "in 0 out 0 · no price" in facts[-1]  # an offline chat's price, after its tokens


# -- viewer and help ---------------------------------------------------------------------------------------
async def test_viewer_shows_blocks_focus_changes_and_never_the_key(notes, db_path, monkeypatch):
    secret = "sk-test-secret"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.services.config.chat.provider = "anthropic"
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)
        await wait_for(pilot, lambda: viewer.query("#block-focus"), what="the blocks")
        names = [b[0] for b in viewer.blocks]
        assert names[:2] == ["tools", "system"] and "focus" in names and "datetime" in names
        assert "set (from $ANTHROPIC_API_KEY)" in plain(viewer.query_one("#viewer-key"))
        summary = plain(viewer.query_one("#viewer-summary"))
        assert "caches prefixes from 2,048 tokens" in summary  # claude-sonnet-4-6, the model table

        focus_text = lambda: plain(viewer.query_one("#block-focus .block-text"))
        app.post_message(FocusChanged(Focus(open=(notes["sourdough"],), primary=notes["sourdough"])))
        await wait_for(pilot, lambda: "Sourdough starter" in focus_text(), what="the focus block")
        title = str(viewer.query_one("#block-focus").title)
        assert "not cached" in title and title.endswith(" tokens")
        assert " · cached · " in str(viewer.query_one("#block-system").title)
        assert " · cache write · " in str(viewer.query_one("#block-user").title)
        assert "writes it to the cache, the next turn reads it" in plain(viewer.query_one("#block-user .block-text"))
        app.post_message(FocusChanged(Focus(open=(notes["sourdough"], notes["tomatoes"]), primary=notes["tomatoes"])))
        await wait_for(pilot, lambda: "Primary (active tab): [NODE:%d" % notes["tomatoes"] in focus_text(),
                       what="the new primary")
        assert "Also open: [NODE:%d" % notes["sourdough"] in focus_text()

        viewer.focus()
        await pilot.press("e")  # expand every block
        await pilot.pause()
        rendered = [plain(w) for w in viewer.query("Static")] + [str(c.title) for c in viewer.query(".block")]
        assert any("Sourdough starter" in r for r in rendered)
        assert not any(secret in r for r in rendered)
        assert secret not in screen_text(app)

        assert viewer.has_focus_within  # the keyboard went with f2, at this (wide) width too

        await pilot.press("f2")
        assert app.query_one("#right").current == "chat"
        assert isinstance(app.focused, ChatInput)  # and came back to the chat input


async def test_a_settings_control_echoing_its_first_value_does_not_undo_a_newer_setting(notes, db_path):
    """A Select re-announces its composed value when it mounts; if the shared config changed in between
    (the palette, another pane), that echo must not set it back. A real choice still applies."""
    from textual.widgets import Select

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)
        await wait_for(pilot, lambda: viewer.blocks, what="the viewer")
        provider = viewer.query_one("#viewer-provider", Select)
        assert provider.value == "offline"
        app.services.config.chat.provider = "anthropic"  # changed elsewhere, the control not yet synced
        provider.post_message(Select.Changed(provider, "offline"))  # the mount-time echo
        await pilot.pause()
        await pilot.pause()
        assert app.services.config.chat.provider == "anthropic"
        provider.value = "openai"  # the user's choice
        await pilot.pause()
        assert app.services.config.chat.provider == "openai"


async def test_viewer_settings_apply_to_the_next_chat(notes, db_path, store):
    from textual.widgets import Select, Switch

    store.add_edge(notes["sourdough"], notes["tomatoes"], "Both grow in the kitchen garden.")
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)
        names = lambda: [b[0] for b in viewer.blocks]
        await wait_for(pilot, lambda: "background" in names(), what="the hubs block")
        background = next(b for b in viewer.blocks if b[0] == "background")
        assert background[1] is True and "Sourdough starter" in background[3]  # cached, names the hubs
        summary = plain(viewer.query_one("#viewer-summary"))
        assert "Offline: nothing is sent" in summary and "caches prefixes" not in summary  # offline caches nothing

        viewer.query_one("#viewer-background", Switch).value = False
        await wait_for(pilot, lambda: viewer.blocks and "background" not in names(), what="blocks without hubs")
        assert app.services.config.chat.background_context is False

        intro = lambda: plain(app.query_one(".chat-intro"))
        assert "No LLM provider is configured" in intro()
        viewer.query_one("#viewer-provider", Select).value = "anthropic"
        await pilot.pause()
        assert app.services.config.chat.provider == "anthropic"
        assert "No LLM provider" not in intro() and "ctrl+j" in intro()  # the new chat's intro is not stale
        assert viewer.query_one("#viewer-model", Select).value == "claude-sonnet-4-6"
        assert "missing (set $ANTHROPIC_API_KEY)" in plain(viewer.query_one("#viewer-key"))
        assert "Settings" in str(app.query_one("#right").border_title)
        viewer.query_one("#viewer-agent", Select).value = "worker"
        await pilot.pause()
        assert app.services.config.chat.agent == "worker"
        from textual.widgets import Button

        viewer.query_one("#viewer-save", Button).press()
        path = app.services.config.path
        await wait_for(pilot, lambda: path.exists() and 'agent = "worker"' in path.read_text(), what="the saved file")
        from core.config import load

        saved = load(path)
        assert (saved.chat.provider, saved.chat.agent, saved.chat.background_context) == ("anthropic", "worker", False)
        await pilot.press("f2")
        assert str(app.query_one("#right").border_title) == "Chat · worker · claude-sonnet-4-6"


async def test_the_chat_total_is_shown_whole_at_120x40(notes, db_path):
    """The status line under the log wraps in the narrow right pane instead of cutting the total."""
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        pane = await type_and_send(pilot, app, "tomato")
        await wait_for(pilot, lambda: app.query(SourceList) and not pane.streaming, what="the offline answer")
        await pilot.pause()
        status = plain(pane.query_one("#chat-status"))
        assert status.startswith(f"chat #{pane.chat_id} · total in 0") and status.endswith("· out 0 · no price")
        lines = screen_text(app).splitlines()
        at = next(i for i, line in enumerate(lines) if f"chat #{pane.chat_id} · total" in line)
        shown = re.sub(r"[│ ]+", " ", " ".join(lines[at:at + 2]))  # the status, wrapped, and the next row
        assert f"chat #{pane.chat_id} · total in 0 (cache read 0, write 0) · out 0" in shown


async def test_viewer_block_titles_fit_the_right_pane_at_120x40(notes, db_path, monkeypatch):
    """At 120 columns the right pane is ~43 wide: each block's title (a one-line Collapsible title)
    and the Stats title are shown whole, never cut mid-word."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.services.config.chat.provider = "anthropic"
        app.query_one(ChatInput).insert("how do I keep a sourdough starter alive")
        app.post_message(FocusChanged(Focus(open=(notes["sourdough"],), primary=notes["sourdough"])))
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)
        await wait_for(pilot, lambda: viewer.query("#block-retrieved") and "Sourdough" in viewer.focus_text,
                       what="the blocks")
        assert app.query_one("#right").size.width <= 45  # the three-pane layout
        model_rows = [line for line in screen_text(app).splitlines() if "Model" in line]
        assert model_rows and "claude-sonnet-4-6" in model_rows[0]  # the model's name on one line, not wrapped
        from textual.widgets import Collapsible

        viewer.query_one("#viewer-stats-section", Collapsible).collapsed = False  # long enough to scroll
        await wait_for(pilot, lambda: viewer.show_vertical_scrollbar, what="the viewer's scrollbar")
        from tui.widgets.context_viewer import _block_title

        # The longest title in practice: retrieved passages reach four-digit token counts.
        viewer.query_one("#block-retrieved", Collapsible).title = _block_title("retrieved", False, 9_999)
        await pilot.pause()
        for collapsible in viewer.query("Collapsible"):
            title = str(collapsible.title)
            viewer.scroll_to_widget(collapsible, animate=False)
            await pilot.pause()
            shown = [line for line in screen_text(app).splitlines()
                     if re.search(f"[▶▼] {re.escape(title.split(' · ')[0])} · ", line)]
            assert shown, f"the title {title!r} is not on the screen"
            assert re.search(f"[▶▼] {re.escape(title)}" + r"(?![\w(~,])", shown[0]), f"cut: {shown[0]!r}"


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_viewer_stats_fit_the_pane_and_wrap_under_their_values(notes, db_path, size):
    """The Stats rows are laid out for the pane: no line is wider than the section (the Static would
    wrap it to its left edge, under the labels); a continuation line is indented."""
    from textual.widgets import Collapsible

    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)
        viewer.query_one("#viewer-stats-section", Collapsible).collapsed = False
        stats = viewer.query_one("#viewer-stats")
        await wait_for(pilot, lambda: "Nodes" in plain(stats) and stats.content_region.width, what="the stats")
        await pilot.pause()
        lines = plain(stats).splitlines()
        room = stats.content_region.width
        assert all(len(line) <= room for line in lines), (room, [line for line in lines if len(line) > room])
        labels = ("Nodes", "Edges", "Chunks", "Pending work", "Memory", "Retention", "Database", "Tokens")
        assert all(line.startswith(labels) or line.startswith("  ") for line in lines), lines
        assert any(line.startswith("Nodes") for line in lines) and "2 (2 notes, 0 memory, 0 other)" in plain(stats)


async def test_help_lists_the_chat_bindings_with_ids(db_path):
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+l")
        await pilot.press("f1")
        from textual.widgets import DataTable

        from tui.screens.help import HelpScreen

        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen")
        assert str(app.screen.query_one(".dialog-title").render()).startswith("Keys for the Chat pane")
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        send = [r for r in rows if r[3] == "send_message"]
        assert send and send[0][1] == "ctrl+j, alt+enter" and send[0][2] == "Send"
        assert any(r[3] == "stop_reply" for r in rows) and any(r[3] == "help" for r in rows)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)

        app.set_keymap({"send_message": "ctrl+s"})  # what a [keymap] entry in the config does
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen again")
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[1] for r in rows if r[3] == "send_message"] == ["ctrl+s"]


async def test_chat_works_at_80x24(notes, db_path):
    app = RecordingApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+l")
        assert app.query_one("#right").styles.display != "none"
        app.query_one(ChatInput).insert("tomato")
        await pilot.press("ctrl+j")
        await wait_for(pilot, lambda: app.query(SourceList), what="the sources list")
        await pilot.pause()
        assert app.query_one("#right").size.width >= 70  # the whole width, not the wide layout's 38%
        assert "[1] Tomato plants" in screen_text(app)


async def test_a_quit_while_the_chat_pane_mounts_is_no_error(db_path, monkeypatch):
    compose = ChatPane.compose

    def compose_then_quit(self):
        yield from compose(self)
        self.app.exit()  # the app closes before the pane's on_mount runs (a quit in the first moment)

    monkeypatch.setattr(ChatPane, "compose", compose_then_quit)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
    assert app.return_code == 0  # a NoMatches raised in on_mount would end the app with an error
    assert not app._right_ready.is_set()
