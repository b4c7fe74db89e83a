"""`cairn mcp`: the MCP stdio server, driven by the official SDK's own client over a real subprocess
(`cairn mcp --db <tmp db>`), beside `cairn add` processes and an in-process indexer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from core import config as core_config
from core.graph.store import Store
from core.agent.tools import SCHEMAS

TOOLS = ["getContext", "queryNodes", "getNodesById", "searchContent", "queryEdges", "createNode", "updateNode",
         "createEdge", "updateEdge", "sqliteQuery", "captureUrl"]  # captureUrl: tests/test_capture_web.py


def _server_env() -> dict[str, str]:
    # stdio_client passes only a few variables (PATH, HOME ...) plus these.
    return {"CAIRN_HOME": os.environ["CAIRN_HOME"], "HOME": os.environ["HOME"]}


@asynccontextmanager
async def mcp_session(cairn_cmd, db: Path, errlog: Path):
    params = StdioServerParameters(command=cairn_cmd[0], args=[*cairn_cmd[1:], "mcp", "--db", str(db)],
                                   env=_server_env())
    with open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                yield session


async def call(session, name: str, args: dict | None = None):
    """(is_error, value): the first text block parsed as JSON when it is JSON, else the text."""
    result = await session.call_tool(name, args or {})
    texts = [c.text for c in result.content]
    try:
        value = json.loads(texts[0])
    except ValueError:
        value = texts[0]
    return result.is_error, value, texts[1:]


async def ok(session, name: str, args: dict | None = None):
    is_error, value, _ = await call(session, name, args)
    assert not is_error, value
    return value


async def refused(session, name: str, args: dict) -> str:
    is_error, value, _ = await call(session, name, args)
    assert is_error, value
    assert isinstance(value, str) and "Traceback" not in value and "\n" not in value
    return value


def _count(db: Path) -> int:
    with Store(db, readonly=True) as store:
        return store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "mcp.db"
    Store(path).close()  # created (and migrated) once, before several processes open it
    return path


@pytest.fixture
def errlog(tmp_path) -> Path:
    return tmp_path / "server-stderr.log"


def _allow_edits() -> None:
    core_config.set_value("mcp.allow_edits", True)  # $CAIRN_HOME/config.toml, which the server reads


# -- tools ------------------------------------------------------------------------------------------
async def test_lists_exactly_the_tools_with_the_model_schemas(cairn_cmd, db, errlog):
    async with mcp_session(cairn_cmd, db, errlog) as s:
        listed = (await s.list_tools()).tools
    assert [t.name for t in listed] == TOOLS
    by_name = {t.name: t for t in listed}
    for name in TOOLS[1:]:
        props = set(by_name[name].input_schema["properties"])
        expected = set(SCHEMAS[name]["input_schema"]["properties"])
        if name in ("updateNode", "createEdge", "updateEdge"):
            expected.add("confirmed_by_user")
            assert by_name[name].input_schema["properties"]["confirmed_by_user"]["type"] == "boolean"
        assert props == expected, name
        assert by_name[name].input_schema["required"] == SCHEMAS[name]["input_schema"]["required"]
    assert by_name["createNode"].input_schema["properties"]["title"]["maxLength"] == 500
    assert by_name["createNode"].input_schema["properties"]["source"]["maxLength"] == 1_000_000
    assert by_name["searchContent"].annotations.read_only_hint is True
    assert by_name["createEdge"].annotations.read_only_hint is False
    # The chat model's schemas are unchanged by the MCP layer.
    assert "confirmed_by_user" not in SCHEMAS["createEdge"]["input_schema"]["properties"]


async def test_create_get_and_search_before_and_after_indexing(cairn_cmd, db, errlog, embedder):
    from core.index.indexer import Indexer

    async with mcp_session(cairn_cmd, db, errlog) as s:
        made = await ok(s, "createNode", {"title": "Glaciers", "source": "Glaciers carve deep valleys as they "
                                          "move slowly downhill over thousands of years.", "dimensions": ["earth"]})
        glacier = made["created"]["id"]
        bread = (await ok(s, "createNode", {"title": "Sourdough",
                                            "source": "Bake the loaf at a high heat after a long rise."}))["created"]["id"]

        got = await ok(s, "getNodesById", {"ids": [glacier, 999]})
        node = got["nodes"][0]
        assert (node["id"], node["title"], node["dimensions"]) == (glacier, "Glaciers", ["earth"])
        assert node["chunk_status"] == "pending"  # written, never embedded by the server
        assert node["metadata"]["created_via"] == "mcp"
        assert got["not_found_or_private"] == [999]

        # Not indexed yet: keyword search finds it, with the start of its text as the passage.
        hits = await ok(s, "searchContent", {"query": "valleys"})
        assert [h["node_id"] for h in hits] == [glacier]
        assert "carve deep valleys" in hits[0]["text"]

        with Store(db) as store:
            assert Indexer(store, embedder).run().indexed == 2

        # Indexed: found by meaning, with no word in common.
        hits = await ok(s, "searchContent", {"query": "frozen water sculpting terrain"})
        assert hits[0]["node_id"] == glacier
        scoped = await ok(s, "searchContent", {"query": "heat", "node_id": bread})
        assert scoped and {h["node_id"] for h in scoped} == {bread}

        # A node created after the index ran is still found by its keyword (hybrid search, fts part).
        late = (await ok(s, "createNode", {"title": "Quokka", "source": "A quokka smiles on Rottnest."}))["created"]["id"]
        hits = await ok(s, "searchContent", {"query": "quokka"})
        # (Rank fusion ties a keyword-only hit with the nearest vector-only one, so it may not be first.)
        assert late in [h["node_id"] for h in hits]
        assert "smiles on Rottnest" in next(h["text"] for h in hits if h["node_id"] == late)
        listed = await ok(s, "queryNodes", {"filter": "quokka"})
        assert [n["id"] for n in listed] == [late]
    assert "Traceback" not in errlog.read_text()


async def test_edges_need_allow_edits_and_confirmed_by_user(cairn_cmd, db, errlog):
    async with mcp_session(cairn_cmd, db, errlog) as s:
        a = (await ok(s, "createNode", {"title": "Ada Lovelace"}))["created"]["id"]
        b = (await ok(s, "createNode", {"title": "Analytical Engine"}))["created"]["id"]
        edge = {"from_id": a, "to_id": b, "explanation": "Ada wrote the first program for the Engine."}

        # mcp.allow_edits is off by default: even a confirmed edit is refused.
        message = await refused(s, "createEdge", {**edge, "confirmed_by_user": True})
        assert "mcp.allow_edits" in message
        assert await ok(s, "queryEdges", {"node_id": a}) == []

        _allow_edits()  # the server picks up the changed config without a restart
        message = await refused(s, "createEdge", edge)
        assert "confirmed_by_user" in message and "Nothing was changed" in message
        await refused(s, "createEdge", {**edge, "confirmed_by_user": False})
        message = await refused(s, "createEdge", {**edge, "confirmed_by_user": "yes"})
        assert "confirmed_by_user must be true or false" in message
        assert await ok(s, "queryEdges", {"node_id": a}) == []

        created = (await ok(s, "createEdge", {**edge, "confirmed_by_user": True}))["created"]
        assert (created["from_node_id"], created["to_node_id"], created["source"]) == (a, b, "mcp")
        edges = await ok(s, "queryEdges", {"node_id": b, "direction": "in"})
        assert [(e["id"], e["explanation"]) for e in edges] == [(created["id"], edge["explanation"])]
        assert await ok(s, "queryEdges", {"node_id": b, "direction": "out"}) == []

        await refused(s, "updateEdge", {"id": created["id"], "explanation": "changed"})
        updated = await ok(s, "updateEdge", {"id": created["id"], "explanation": "She annotated it.",
                                             "confirmed_by_user": True})
        assert updated["updated"]["explanation"] == "She annotated it."

        await refused(s, "updateNode", {"id": a, "title": "Changed"})
        assert (await ok(s, "getNodesById", {"ids": [a]}))["nodes"][0]["title"] == "Ada Lovelace"
        await ok(s, "updateNode", {"id": a, "title": "Augusta Ada King", "confirmed_by_user": True})
        assert (await ok(s, "getNodesById", {"ids": [a]}))["nodes"][0]["title"] == "Augusta Ada King"

        context = await ok(s, "getContext")
        assert [(h["id"], h["edge_count"]) for h in context["hubs"]] == [(a, 1), (b, 1)]


@pytest.mark.parametrize("sql", [
    "INSERT INTO nodes(title) VALUES ('x')",
    "DELETE FROM nodes",
    "UPDATE nodes SET title = 'x'",
    "DROP TABLE edges",
    "CREATE TABLE t(x)",
    "ATTACH DATABASE ':memory:' AS other",
    "PRAGMA writable_schema = ON",
    "PRAGMA journal_mode = DELETE",
    "SELECT 1; DELETE FROM nodes",
    "SELECT load_extension('x')",
])
async def test_sqlite_query_never_writes(cairn_cmd, db, errlog, sql):
    with Store(db) as store:
        store.add_node("Keep me", "text")
    async with mcp_session(cairn_cmd, db, errlog) as s:
        message = await refused(s, "sqliteQuery", {"sql": sql})
        assert message.startswith("Refused")
        assert await ok(s, "sqliteQuery", {"sql": "SELECT title FROM nodes"}) == {
            "columns": ["title"], "rows": [["Keep me"]], "truncated": False}
    with Store(db, readonly=True) as store:
        assert [n["title"] for n in store.recent()] == ["Keep me"]
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_limits_are_explicit_errors_and_the_server_keeps_running(cairn_cmd, db, errlog):
    async with mcp_session(cairn_cmd, db, errlog) as s:
        message = await refused(s, "createNode", {"title": "t" * 501})
        assert "501 characters" in message and "limit is 500" in message
        message = await refused(s, "createNode", {"title": "big", "source": "x" * 1_000_001})
        assert "1,000,001 characters" in message and "1,000,000" in message and "xxxx" not in message
        message = await refused(s, "queryNodes", {"limit": 51})
        assert "maximum is 50" in message
        message = await refused(s, "getNodesById", {"ids": list(range(1, 52))})
        assert "at most 50" in message
        await refused(s, "getNodesById", {"ids": ["one"]})
        message = await refused(s, "createNode", {"title": "x", "colour": "red"})
        assert "colour" in message
        await refused(s, "createNode", {"source": "no title"})
        await refused(s, "createNode", {"title": "   "})
        await refused(s, "createNode", {"title": "bad date", "event_date": "yesterday"})
        await refused(s, "queryEdges", {"node_id": 12345})
        await refused(s, "noSuchTool", {})
        # Nothing was written by the refused calls, and the server still answers.
        context = await ok(s, "getContext")
        assert context["counts"]["nodes"] == 0
        assert (await ok(s, "createNode", {"title": "t" * 500}))["created"]["title"] == "t" * 500
    assert _count(db) == 1
    assert "Traceback" not in errlog.read_text()


async def test_get_context_counts_recent_and_hubs(cairn_cmd, db, errlog):
    with Store(db) as store:
        ids = [store.add_node(f"Note {i}", f"text {i}", dimensions=["work"] if i % 2 else ["home"])["id"]
               for i in range(5)]
        store.add_edge(ids[0], ids[1], "The first leads to the second.")
        store.add_edge(ids[2], ids[0], "The third cites the first.")
        # One timestamp for all, so the tie below is a tie on any machine (two adds can fall in one millisecond or not).
        store.db.execute("UPDATE nodes SET updated_at = '2026-01-01T00:00:00Z'")
    async with mcp_session(cairn_cmd, db, errlog) as s:
        context = await ok(s, "getContext", {"limit": 3})
        with Store(db) as store:
            store.db.execute("UPDATE nodes SET updated_at = '2026-01-02T00:00:00Z' WHERE id = ?", (ids[2],))
        later = await ok(s, "getContext", {"limit": 3})
    assert context["counts"] == {"nodes": 5, "edges": 2, "pending": 5, "index_errors": 0}
    assert [n["id"] for n in context["recent"]] == ids[::-1][:3]
    # ties: the most recently updated, then the lower id (RA-H's newest hub query orders so)
    assert [(h["id"], h["edge_count"]) for h in context["hubs"]] == [(ids[0], 2), (ids[1], 1), (ids[2], 1)]
    assert [(h["id"], h["edge_count"]) for h in later["hubs"]] == [(ids[0], 2), (ids[2], 1), (ids[1], 1)]
    assert {d["dimension"]: d["count"] for d in context["dimensions"]} == {"work": 2, "home": 3}
    assert context["limits"]["results_per_call"] == 50


async def test_never_send_dimensions_stay_hidden(cairn_cmd, db, errlog):
    core_config.set_value("privacy.never_send", ["private"])
    with Store(db) as store:
        secret = store.add_node("Diary", "my zanzibar secret", dimensions=["Private"])["id"]
        public = store.add_node("Trip", "zanzibar beaches")["id"]
    async with mcp_session(cairn_cmd, db, errlog) as s:
        got = await ok(s, "getNodesById", {"ids": [secret, public]})
        assert [n["id"] for n in got["nodes"]] == [public] and got["not_found_or_private"] == [secret]
        hits = await ok(s, "searchContent", {"query": "zanzibar"})
        assert [h["node_id"] for h in hits] == [public]
        await refused(s, "queryEdges", {"node_id": secret})
        await refused(s, "sqliteQuery", {"sql": "SELECT source FROM nodes"})
        context = await ok(s, "getContext")
        assert [n["id"] for n in context["recent"]] == [public]
        assert [d["dimension"] for d in context["dimensions"]] == []


def test_print_config_names_the_database(cairn_cmd, tmp_path):
    env = dict(os.environ)
    proc = subprocess.run([*cairn_cmd, "mcp", "--print-config", "--db", "sub/../notes.db"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    server = json.loads(proc.stdout)["mcpServers"]["cairn"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).exists()
    assert server["args"][-3:] == ["mcp", "--db", str((tmp_path / "notes.db").resolve())]
    assert not (tmp_path / "notes.db").exists()  # printing the config creates nothing


# -- beside other processes -----------------------------------------------------------------------
ADD_LOOP = """
import subprocess, sys
cmd, db, tag = sys.argv[1:-2], sys.argv[-2], sys.argv[-1]
for i in range(20):
    p = subprocess.run([*cmd, "add", f"{tag} note {i}", "--db", db], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0 or p.stderr:
        sys.exit(f"{tag} {i}: rc={p.returncode} {p.stderr}")
"""


async def test_writes_beside_concurrent_cairn_add_lose_nothing(cairn_cmd, db, errlog):
    before = _count(db)
    loops = [subprocess.Popen([sys.executable, "-c", ADD_LOOP, *cairn_cmd, str(db), f"cli{k}"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=dict(os.environ), text=True)
             for k in range(3)]
    try:
        async with mcp_session(cairn_cmd, db, errlog) as s:
            for i in range(20):
                # Pace the MCP writes by the CLI's progress so they interleave with it (no timing asserted).
                with anyio.move_on_after(5):
                    while _count(db) - before - i < 2 * i and any(p.poll() is None for p in loops):
                        await anyio.sleep(0.02)
                await ok(s, "createNode", {"title": f"mcp note {i}", "source": "written beside cairn add"})
        results = [await anyio.to_thread.run_sync(lambda p=p: p.communicate(timeout=300)) for p in loops]
    finally:
        for p in loops:
            if p.poll() is None:
                p.kill()
    for p, (_, err) in zip(loops, results):
        assert p.returncode == 0, err
    with Store(db, readonly=True) as store:
        titles = [r[0] for r in store.db.execute("SELECT title FROM nodes")]
    assert len(titles) == before + 80
    expected = {f"mcp note {i}" for i in range(20)} | {f"cli{k} note {i}" for k in range(3) for i in range(20)}
    assert set(titles) == expected
    assert "locked" not in errlog.read_text().lower()


async def test_a_write_waits_for_another_process_lock(cairn_cmd, db, errlog):
    from core.graph.db import sqlite

    async with mcp_session(cairn_cmd, db, errlog) as s:
        await ok(s, "getContext")
        holder = sqlite.connect(str(db), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        holder.execute("INSERT INTO meta(key, value) VALUES ('holder', 'x')")
        async with anyio.create_task_group() as tg:
            result = {}

            async def write():
                result["value"] = await call(s, "createNode", {"title": "after the lock"})

            tg.start_soon(write)
            await anyio.sleep(0.5)
            assert "value" not in result  # still waiting for the lock, not failed
            holder.execute("COMMIT")
        holder.close()
        is_error, value, _ = result["value"]
        assert not is_error, value
        assert value["created"]["title"] == "after the lock"


# -- in process -------------------------------------------------------------------------------------
def test_search_falls_back_to_keywords_when_the_embedder_cannot_load(db):
    from core.errors import EmbedderError
    from core.agent.mcp_server import CairnTools

    class Broken:
        dimensions = 384

        def embed_one(self, text):
            raise EmbedderError("Cannot load the embedding model: no such file")

        embed = embed_one

    tools = CairnTools(db, embedder=Broken())
    try:
        node, _ = tools.call("createNode", {"title": "Walrus", "source": "Walruses haul out on ice floes."})
        hits, notes = tools.call("searchContent", {"query": "walruses"})
        assert [h["node_id"] for h in hits] == [node["created"]["id"]]
        assert len(notes) == 1 and "keyword (fts) results only" in notes[0] and "no such file" in notes[0]
        hits, notes = tools.call("queryNodes", {"filter": "walruses"})
        assert notes == []
    finally:
        tools.close()


def test_a_note_an_mcp_client_changes_reaches_its_file_in_the_bound_folder(db, tmp_path, monkeypatch):
    """With `[vault] path` set, a createNode or updateNode over MCP is written to the folder when the call
    ends (core/vault/write_back.py), with no app or `cairn watch` running."""
    from core.agent.mcp_server import CairnTools
    from core.vault.twoway import TwoWaySync

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Walrus.md").write_text("Walruses haul out on ice floes.\n", encoding="utf-8")
    with Store(db) as store:
        TwoWaySync(store, vault).round(create_new=True)
        walrus = store.db.execute("SELECT id FROM nodes WHERE title = 'Walrus'").fetchone()[0]
    config = tmp_path / "config.toml"
    config.write_text(f'[vault]\npath = "{vault}"\n\n[mcp]\nallow_edits = true\n', encoding="utf-8")
    from core.vault.write_back import write_back_store

    tools = CairnTools(db, config_path=config, after_write=write_back_store)  # as `cairn mcp` makes it
    try:
        tools.call("updateNode", {"id": walrus, "source": "Walruses haul out on ice floes and beaches.",
                                  "confirmed_by_user": True})
        assert (vault / "Walrus.md").read_text(encoding="utf-8") == "Walruses haul out on ice floes and beaches."
        created, notes = tools.call("createNode", {"title": "Narwhal", "source": "Narwhals have a tusk."})
        assert notes == [] and (vault / "Narwhal.md").read_text(encoding="utf-8").endswith("Narwhals have a tusk.")
    finally:
        tools.close()
