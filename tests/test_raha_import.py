"""RA-H OS database import (core.vault.raha) from small RA-H-shaped SQLite files built here.

The shapes follow RA-H's published schema (seeds/003: nodes, edges with a top-level `explanation`
and a `context` JSON, chunks; dimensions in node metadata) and its older one (node text in
`content`, dimensions in `dimensions` + `node_dimensions` tables, the explanation inside `context`).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from core.errors import InvalidInput
from core.vault.raha import import_raha


def make_current(path: Path) -> Path:
    c = sqlite3.connect(path)
    c.executescript("""
        CREATE TABLE nodes (id INTEGER PRIMARY KEY, title TEXT, description TEXT, source TEXT, link TEXT,
            metadata TEXT, chunk_status TEXT, event_date TEXT, embedding BLOB, embedding_updated_at TEXT,
            embedding_text TEXT, created_at TEXT, updated_at TEXT);
        CREATE TABLE edges (id INTEGER PRIMARY KEY, from_node_id INTEGER, to_node_id INTEGER, explanation TEXT,
            context TEXT, source TEXT, created_at TEXT);
        CREATE TABLE chunks (id INTEGER PRIMARY KEY, node_id INTEGER, chunk_idx INTEGER, text TEXT,
            embedding_type TEXT, metadata TEXT, created_at TEXT);
        CREATE TABLE dimension_migration_snapshots (id INTEGER PRIMARY KEY, payload TEXT, created_at TEXT);
    """)
    blob = b"\x00" * 6144
    c.executemany("INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", [
        (10, "Attention Is All You Need", "The transformer paper", "Long text of the paper.",
         "https://arxiv.org/abs/1706.03762", json.dumps({"dimensions": ["papers", "ai"], "authors": ["Vaswani"]}),
         "chunked", "2017-06-12", blob, None, "emb text", "2025-01-05T10:00:00.000Z", "2025-02-01T08:30:00.000Z"),
        (11, "Transformers", "Idea", "Self-attention replaces recurrence.", None,
         json.dumps({"dimensions": ["ai"]}), "chunked", None, blob, None, None, "2025-01-06T10:00:00Z", None),
        (12, "Ashish Vaswani", "", "", None, "{}", "not_chunked", "2017-06-12T00:00:00Z", None, None, None,
         "2025-01-07 09:00:00", "2025-01-07 09:00:00"),
    ])
    c.executemany("INSERT INTO edges VALUES (?,?,?,?,?,?,?)", [
        (1, 10, 11, "The paper introduced transformers", json.dumps({"type": "introduces", "confidence": 0.9}),
         "user", "2025-01-08T00:00:00Z"),
        (2, 10, 12, None, json.dumps({"explanation": "Written by Vaswani", "type": "authored_by"}), "agent", None),
        (3, 11, 99, "dangling", "{}", "user", None),
        (4, 11, 11, "self", "{}", "user", None),
    ])
    c.execute("INSERT INTO chunks VALUES (1, 10, 0, 'Long text', 'text', '{}', '2025-01-05')")
    c.commit()
    c.close()
    return path


def make_legacy(path: Path) -> Path:
    c = sqlite3.connect(path)
    c.executescript("""
        CREATE TABLE nodes (id INTEGER PRIMARY KEY, title TEXT, content TEXT, type TEXT, link TEXT,
            metadata TEXT, embedding BLOB, created_at TEXT, updated_at TEXT);
        CREATE TABLE edges (id INTEGER PRIMARY KEY, from_node_id INTEGER, to_node_id INTEGER, context TEXT,
            source TEXT, user_feedback INTEGER, created_at TEXT);
        CREATE TABLE dimensions (name TEXT PRIMARY KEY, is_priority INTEGER);
        CREATE TABLE node_dimensions (node_id INTEGER, dimension TEXT, PRIMARY KEY (node_id, dimension));
        CREATE TABLE chunks (id INTEGER PRIMARY KEY, node_id INTEGER, chunk_idx INTEGER, text TEXT,
            embedding_type TEXT, created_at TEXT);
        INSERT INTO nodes VALUES (1, 'Zettelkasten', 'One idea per note.', 'idea', NULL, NULL, NULL,
            '2024-03-01 12:00:00', '2024-03-02 12:00:00');
        INSERT INTO nodes VALUES (2, 'Niklas Luhmann', 'Sociologist.', 'person', 'https://en.wikipedia.org/wiki/Niklas_Luhmann',
            '{"note": "kept"}', NULL, 1709294400000, 1709294400000);
        INSERT INTO dimensions VALUES ('method', 1), ('people', 0);
        INSERT INTO node_dimensions VALUES (1, 'method'), (2, 'people');
        INSERT INTO edges VALUES (1, 2, 1, '{"explanation": "Luhmann invented the Zettelkasten", "category": "x"}',
            'user', NULL, '2024-03-03 00:00:00');
    """)
    c.commit()
    c.close()
    return path


def titles(store) -> dict[str, dict]:
    ids = [r[0] for r in store.db.execute("SELECT id FROM nodes")]
    return {n["title"]: n for n in store.get_nodes(ids)}


def edges(store) -> set[tuple[str, str, str]]:
    return {(r[0], r[1], r[2]) for r in store.db.execute(
        "SELECT f.title, t.title, e.explanation FROM edges e JOIN nodes f ON f.id = e.from_node_id"
        " JOIN nodes t ON t.id = e.to_node_id")}


def test_current_schema(store, tmp_path):
    src = make_current(tmp_path / "rah.sqlite")
    report = import_raha(store, src)
    assert (report.nodes, report.created, report.dimensions_from) == (3, 3, "metadata")
    n = titles(store)
    paper = n["Attention Is All You Need"]
    assert paper["description"] == "The transformer paper" and paper["source"] == "Long text of the paper."
    assert paper["link"] == "https://arxiv.org/abs/1706.03762" and paper["event_date"] == "2017-06-12"
    assert paper["dimensions"] == ["papers", "ai"]
    assert paper["created_at"] == "2025-01-05T10:00:00.000Z" and paper["updated_at"] == "2025-02-01T08:30:00.000Z"
    assert paper["metadata"]["raha"]["id"] == 10 and paper["metadata"]["raha"]["metadata"] == {"authors": ["Vaswani"]}
    assert n["Ashish Vaswani"]["event_date"] == "2017-06-12"
    assert n["Ashish Vaswani"]["created_at"] == "2025-01-07T09:00:00.000Z"
    assert all(x["chunk_status"] == "pending" for x in n.values())  # Cairn embeds them itself
    assert store.counts()["chunks"] == 0
    assert edges(store) == {
        ("Attention Is All You Need", "Transformers", "The paper introduced transformers"),
        ("Attention Is All You Need", "Ashish Vaswani", "Written by Vaswani"),
    }
    assert report.edges_created == 2 and report.edges_skipped == 2  # a dangling edge and a self-edge
    e = store.db.execute("SELECT context, source, created_at FROM edges WHERE explanation LIKE 'The paper%'").fetchone()
    ctx = json.loads(e["context"])
    assert ctx["type"] == "introduces" and ctx["confidence"] == 0.9 and e["source"] == "raha"
    assert e["created_at"] == "2025-01-08T00:00:00.000Z"


def test_legacy_dimension_tables(store, tmp_path):
    src = make_legacy(tmp_path / "old.db")
    report = import_raha(store, src)
    assert report.created == 2 and report.dimensions_from == "legacy tables"
    n = titles(store)
    z, l = n["Zettelkasten"], n["Niklas Luhmann"]
    assert z["source"] == "One idea per note." and z["dimensions"] == ["method"] and z["type"] == "idea"
    assert l["dimensions"] == ["people"] and l["link"].endswith("Niklas_Luhmann")
    assert z["created_at"] == "2024-03-01T12:00:00.000Z" and z["updated_at"] == "2024-03-02T12:00:00.000Z"
    assert l["created_at"] == "2024-03-01T12:00:00.000Z"  # epoch milliseconds
    assert edges(store) == {("Niklas Luhmann", "Zettelkasten", "Luhmann invented the Zettelkasten")}


def test_reimport_is_idempotent_and_follows_changes(store, tmp_path):
    src = make_current(tmp_path / "rah.sqlite")
    import_raha(store, src)
    before = {t: x["updated_at"] for t, x in titles(store).items()}
    again = import_raha(store, src)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 3)
    assert (again.edges_created, again.edges_removed, again.edges_updated) == (0, 0, 0)
    assert {t: x["updated_at"] for t, x in titles(store).items()} == before and store.counts()["edges"] == 2

    n = titles(store)
    store.add_edge(n["Transformers"]["id"], n["Ashish Vaswani"]["id"], "Made by the user in Cairn")
    store.update_node(n["Transformers"]["id"], dimensions=["ai", "mine"])
    c = sqlite3.connect(src)
    c.execute("UPDATE nodes SET title = 'Transformer architecture', source = 'Updated.' WHERE id = 11")
    c.execute("DELETE FROM edges WHERE id = 2")
    c.execute("UPDATE edges SET explanation = 'Introduced the architecture' WHERE id = 1")
    c.execute("INSERT INTO edges VALUES (5, 12, 10, 'Vaswani wrote it', '{}', 'user', NULL)")
    c.commit()
    c.close()
    report = import_raha(store, src)
    assert (report.created, report.updated, report.unchanged) == (0, 1, 2)
    assert (report.edges_created, report.edges_removed, report.edges_updated) == (1, 1, 1)
    node = store.get_node(n["Transformers"]["id"])
    assert node["title"] == "Transformer architecture" and node["source"] == "Updated."
    assert node["dimensions"] == ["ai", "mine"] and node["chunk_status"] == "pending"
    assert edges(store) == {
        ("Attention Is All You Need", "Transformer architecture", "Introduced the architecture"),
        ("Ashish Vaswani", "Attention Is All You Need", "Vaswani wrote it"),
        ("Transformer architecture", "Ashish Vaswani", "Made by the user in Cairn"),
    }
    assert store.counts()["nodes"] == 3


def test_both_dimension_sources(store, tmp_path):
    src = make_current(tmp_path / "rah.sqlite")
    c = sqlite3.connect(src)
    c.executescript("CREATE TABLE node_dimensions (node_id INTEGER, dimension TEXT);"
                    "INSERT INTO node_dimensions VALUES (10, 'classic'), (10, 'AI');")
    c.commit()
    c.close()
    report = import_raha(store, src)
    assert report.dimensions_from == "both"
    assert titles(store)["Attention Is All You Need"]["dimensions"] == ["papers", "ai", "classic"]


def test_refuses_what_is_not_an_raha_database(store, db_path, tmp_path):
    other = tmp_path / "other.sqlite"
    c = sqlite3.connect(other)
    c.execute("CREATE TABLE nodes (id INTEGER PRIMARY KEY, name TEXT)")
    c.execute("CREATE TABLE people (id INTEGER)")
    c.commit()
    c.close()
    with pytest.raises(InvalidInput, match="not an RA-H OS one.*nodes, people"):
        import_raha(store, other)
    text = tmp_path / "notes.sqlite"
    text.write_text("just text")
    with pytest.raises(InvalidInput, match="not a SQLite database"):
        import_raha(store, text)
    with pytest.raises(InvalidInput, match="Cairn's own database"):
        import_raha(store, db_path)
    assert store.counts()["nodes"] == 0


def test_source_database_is_not_changed(store, tmp_path):
    src = make_current(tmp_path / "rah.sqlite")
    before = src.read_bytes()
    import_raha(store, src)
    assert src.read_bytes() == before


def test_cli_imports_then_indexes(cairn_cmd, cli_env, tmp_path):
    src = make_legacy(tmp_path / "rah.sqlite")
    db = tmp_path / "cli.db"
    run = subprocess.run([*cairn_cmd, "--db", str(db), "import", str(src), "--json", "--no-index"], env=cli_env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["kind"] == "raha" and data["created"] == 2 and data["index"] is None
    src2 = make_current(tmp_path / "rah2.sqlite")
    run = subprocess.run([*cairn_cmd, "--db", str(db), "import", str(src2)], env=cli_env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "3 created" in run.stdout and "Indexed 5 nodes" in run.stdout
    bad = tmp_path / "bad.sqlite"
    sqlite3.connect(bad).execute("CREATE TABLE t (x)").connection.commit()
    run = subprocess.run([*cairn_cmd, "--db", str(db), "import", str(bad)], env=cli_env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "not an RA-H OS one" in run.stderr and "Traceback" not in run.stderr
