"""Chat retrieval without meaning search (issue 8): when the embedding model cannot load, or the
indexing backlog is large, the context engine uses keyword passages plus the most recent notes and
says so (`retrieval_note`), in the Context viewer and in `cairn context`."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from chat_support import _no_proxies, anth, anthropic_provider, new_chat, searcher, send  # noqa: F401  (fixtures)
from core.graph.privacy import SendPolicy
from core.agent import profiles
from core.search import retrieval_fallback
from core.agent.profiles import Agent
from core.chat.context import ContextEngine
from core.errors import EmbedderError
from core.search.searcher import Searcher
from fakes import text


class BrokenEmbedder:
    """An embedder whose model files are missing (as tests/test_mcp.py simulates it)."""

    name = "broken"
    dimensions = 384

    def embed_one(self, text):
        raise EmbedderError("Cannot load the embedding model: no such file")

    embed = embed_one


def engine(store, searcher, agent: str = "orchestrator", **kw) -> ContextEngine:
    return ContextEngine(store, searcher, profiles.get(agent) if isinstance(agent, str) else agent, **kw)


@pytest.fixture
def indexed_graph(store, indexer):
    kiln = store.add_node("Kiln firing", "Fire the kiln slowly to 1,240 degrees; bisque first, glaze second. " * 3)
    clay = store.add_node("Clay recipe", "Mix the stoneware clay with grog so the kiln does not crack it. " * 3)
    other = store.add_node("Tax checklist", "Collect payslips and receipts before the filing deadline. " * 3)
    indexer.run()
    newest = store.add_node("Newest idea", "A thought captured a moment ago about bicycles.")  # not indexed yet
    return {"kiln": kiln["id"], "clay": clay["id"], "tax": other["id"], "newest": newest["id"]}


def test_a_missing_model_falls_back_to_keywords_and_recent_notes(store, indexed_graph):
    eng = engine(store, Searcher(store, BrokenEmbedder()))
    passages = eng.retrieve("how hot should the kiln be?")
    assert eng.retrieval_note.startswith("Retrieval: keyword search only — the embedding model is not available")
    assert "no such file" in eng.retrieval_note
    ids = [p.node_id for p in passages]
    assert set(ids[:2]) == {indexed_graph["kiln"], indexed_graph["clay"]}  # both mention the kiln
    # then the most recent notes not already there: the newest (not indexed: the start of its text)
    assert ids[2:] == [indexed_graph["newest"], indexed_graph["tax"]]
    newest = passages[2]
    assert newest.text == "A thought captured a moment ago about bicycles." and newest.cosine is None
    assert all(p.cosine is None for p in passages) and [p.n for p in passages] == [1, 2, 3, 4]
    assert [p.via for p in passages] == ["keyword", "keyword", "recent", "recent"]
    suffix = eng.suffix("how hot should the kiln be?")
    assert "[1] [NODE:" in suffix.retrieved and "Kiln firing" in suffix.retrieved
    # The model is told which passages are only recent notes, not matches.
    assert suffix.retrieved.count("(a recent note, added while meaning search is unavailable; not ranked for this message)") == 2
    assert f'[3] [NODE:{indexed_graph["newest"]}:"Newest idea"] (a recent note, added while' in suffix.retrieved


def test_the_offline_answer_marks_recent_notes(store, indexed_graph):
    from core.chat.conversation import Chat
    from core.config import Config
    from core.providers.offline import OfflineProvider

    chat = Chat(store, Config(), OfflineProvider(), searcher=Searcher(store, BrokenEmbedder()))
    send(chat, "how hot should the kiln be?")
    answer = chat.last_reply.text
    assert "**Newest idea** *(a recent note, not ranked for this question)*" in answer
    assert "**Kiln firing** —" in answer  # a keyword match is not marked


def test_a_working_model_gives_no_note_and_no_recent_padding(store, indexed_graph, searcher):
    eng = engine(store, searcher)
    passages = eng.retrieve("how hot should the kiln be?")
    assert eng.retrieval_note is None
    assert indexed_graph["kiln"] in {p.node_id for p in passages}
    assert indexed_graph["newest"] not in {p.node_id for p in passages}
    assert eng.retrieve("") == [] and eng.retrieval_note is None


def test_the_fallback_keeps_privacy_and_the_read_scope(store):
    store.add_node("Private kiln log", "The kiln log with the secret glaze recipe.", dimensions=["private"])
    work = store.add_node("Work kiln", "The kiln at work fires on Tuesdays.", dimensions=["work"])
    store.add_node("Home kiln", "The kiln at home is small.", dimensions=["home"])
    broken = Searcher(store, BrokenEmbedder())
    hidden = engine(store, broken, policy=SendPolicy(frozenset({"private"})))
    texts = " ".join(p.text for p in hidden.retrieve("kiln"))
    assert "secret" not in texts and hidden.retrieval_note
    scoped = Agent("scoped", "worker", "", "Do it.", (), read_scope=("work",))
    assert {p.node_id for p in engine(store, broken, scoped).retrieve("kiln")} == {work["id"]}


def test_memory_nodes_are_not_padded_in_as_recent_notes(store):
    note = store.add_node("Older note", "Something unrelated to the question.")
    store.add_node("Answered: latest", "The latest reply, already in the chat history.", type="memory")
    eng = engine(store, Searcher(store, BrokenEmbedder()))
    assert [p.node_id for p in eng.retrieve("zebra crossings")] == [note["id"]]


def test_a_large_backlog_falls_back_and_a_small_one_does_not(store, indexed_graph, searcher):
    assert retrieval_fallback.backlog(store) == (1, 4)
    eng = engine(store, searcher)
    eng.retrieve("kiln temperature")
    assert eng.retrieval_note is None  # 1 pending: the indexer catches up in a moment
    for i in range(retrieval_fallback.BACKLOG_MIN_PENDING - 1):
        store.add_node(f"Imported {i}", f"Imported page {i} about pottery glazes and the kiln schedule.")
    pending, total = retrieval_fallback.backlog(store)
    assert pending == retrieval_fallback.BACKLOG_MIN_PENDING and pending > 0.2 * total
    passages = eng.retrieve("kiln temperature")
    assert eng.retrieval_note == (f"Retrieval: keyword search only — {pending:,} of {total:,} nodes are waiting "
                                  "to be indexed (run `cairn index`, or leave the app open); passages are keyword "
                                  "matches plus the most recent notes.")
    assert len(passages) == retrieval_fallback.KEYWORD_PASSAGES + retrieval_fallback.RECENT_NODES
    assert not retrieval_fallback.backlog_is_large(49, 100)  # under the minimum count, and not most
    assert not retrieval_fallback.backlog_is_large(200, 1000)  # 20 % is not more than 20 %
    assert retrieval_fallback.backlog_is_large(201, 1000)


def test_a_chat_turn_works_without_the_model(store, indexed_graph, anth):
    chat = new_chat(store, anthropic_provider(anth), Searcher(store, BrokenEmbedder()))
    anth.script.add(text("Around 1,240 degrees [1]."))
    send(chat, "how hot should the kiln be?")
    assert chat.last_reply.status == "complete"
    sent = json.dumps(anth.requests[-1].body)
    assert "Kiln firing" in sent and "[Retrieved passages" in sent
    assert chat.last_reply.citations["passages"]["1"] in (indexed_graph["kiln"], indexed_graph["clay"])


def test_cairn_context_prints_the_note(cairn_cmd, cli_env):
    from core.graph.store import Store

    home = Path(cli_env["CAIRN_HOME"])
    home.mkdir(parents=True)
    with Store(home / "cairn.db") as s:
        for i in range(60):
            s.add_node(f"Imported {i}", f"Imported page {i} about the kiln schedule.")
    r = subprocess.run([*cairn_cmd, "context", "kiln schedule"], env=cli_env, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "Retrieval: keyword search only — 60 of 60 nodes are waiting to be indexed" in r.stdout
    assert "[Retrieved passages" in r.stdout
    r = subprocess.run([*cairn_cmd, "context", "kiln schedule", "--json"], env=cli_env, capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert json.loads(r.stdout)["retrieval_note"].startswith("Retrieval: keyword search only — 60 of 60 nodes")


# -- the Context viewer shows it -------------------------------------------------------------------------
async def test_the_context_viewer_shows_the_note_above_the_retrieved_block(store, db_path, embedder, monkeypatch):
    import core.index.embedder
    from rich.text import Text

    from tui.app import CairnApp
    from tui.widgets.chat_pane import ChatInput
    from tui.widgets.context_viewer import ContextViewer

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    for i in range(60):
        store.add_node(f"Imported {i}", f"Imported page {i} about the kiln schedule.")

    class Backlogged(CairnApp):
        def index_pending(self) -> None:  # the backlog stays for the test
            pass

        def watch_database(self) -> None:
            pass

    app = Backlogged(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+l")
        app.query_one(ChatInput).insert("kiln schedule")
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)
        deadline = time.monotonic() + 15
        while not viewer.query("#viewer-retrieval-note"):
            assert time.monotonic() < deadline, "timed out waiting for the retrieval note"
            await pilot.pause(0.05)
        note = viewer.query_one("#viewer-retrieval-note")
        content = note.content
        shown = content.plain if isinstance(content, Text) else str(content)
        assert "keyword search only — 60 of 60 nodes are waiting to be indexed" in shown
        children = list(viewer.query_one("#viewer-blocks").children)
        assert children[children.index(note) + 1].id == "block-retrieved"
