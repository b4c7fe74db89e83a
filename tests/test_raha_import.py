"""RA-H OS database import (core.vault.raha) from small RA-H-shaped SQLite files built here.

The shapes follow RA-H's published schema (seeds/003: nodes, edges with a top-level `explanation`
and a `context` JSON, chunks; dimensions in node metadata) and its older one (node text in
`content`, dimensions in `dimensions` + `node_dimensions` tables, the explanation inside `context`).
"""

from __future__ import annotations

import json
import re
import shutil
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
    assert (report.edges_dangling, report.edges_self, report.edges_duplicate) == (1, 1, 0)
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
    assert report.dimensions_from == "metadata + legacy tables"
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


# -- every era of RA-H's schema (tests/raha_eras.py) -------------------------------------------------------

from core.graph.store import clean_event_date  # noqa: E402
from raha_eras import ERAS, FEB_EVENT_DATES, make_apr2026, make_dec2025, make_feb2026, make_from_id_edges, raha_hubs  # noqa: E402


def edge_rows(store) -> dict[tuple[str, str], dict]:
    return {(r["f"], r["t"]): {"explanation": r["explanation"], "context": json.loads(r["context"])}
            for r in store.db.execute(
                "SELECT f.title AS f, t.title AS t, e.explanation, e.context FROM edges e"
                " JOIN nodes f ON f.id = e.from_node_id JOIN nodes t ON t.id = e.to_node_id")}


def without_dimension_tables(path: Path) -> Path:
    """The same file without its dimension tables, so a test reaches what it is about even on an
    importer that stumbles over WITHOUT ROWID first."""
    c = sqlite3.connect(path)
    c.executescript("DROP TABLE IF EXISTS node_dimensions; DROP TABLE IF EXISTS dimensions;")
    c.commit()
    c.close()
    return path


def test_chunk_is_the_text_and_content_the_summary(store, tmp_path):
    import_raha(store, without_dimension_tables(make_dec2025(tmp_path / "dec.sqlite")))
    n = titles(store)
    assert n["Deep Work"]["source"].startswith("Deep work is the ability")
    assert n["Deep Work"]["description"] == "A book on focus."
    assert "A consolidated note" in n["Attention residue"]["source"]


def test_december_2025_without_rowid_chunk_content_and_type(store, tmp_path):
    """node_dimensions WITHOUT ROWID used to fail the whole import ("no such column: rowid")."""
    report = import_raha(store, make_dec2025(tmp_path / "dec.sqlite"))
    assert (report.nodes, report.created, len(report.skipped)) == (5, 5, 0)
    n = titles(store)
    book = n["Deep Work"]
    assert book["source"].startswith("Deep work is the ability") and len(book["source"]) > 400  # chunk: the full text
    assert book["description"] == "A book on focus."  # content: the summary
    assert book["type"] == "book" and book["dimensions"] == ["books", "research"]  # primary-key order
    assert book["event_date"] == "2016-01-05"  # metadata.published_date "Jan 5, 2016"
    assert n["Cal Newport"]["event_date"] == "1981"  # a bare year stays a year
    assert n["Focus sessions"]["source"] == "Ninety-minute blocks, phone in another room."  # content only: the text
    assert n["Focus sessions"]["description"] == ""
    residue = n["Attention residue"]  # content longer than the chunk: not a summary, kept in the text
    assert residue["description"] == "Switching costs"
    assert residue["source"].startswith("When you switch tasks") and "## Summary" in residue["source"]
    assert "A consolidated note" in residue["source"]
    assert n["User works best in the morning"]["type"] == "memory"
    assert (report.text_from_chunk, report.text_from_content, report.description_from_content,
            report.summary_appended, report.memory) == (2, 2, 1, 1, 1)
    assert report.dimensions_from == "legacy tables" and report.dimensions_assigned == 4
    assert (report.event_dates, report.event_dates_from_metadata, report.event_dates_partial,
            report.event_dates_converted) == (2, 2, 1, 1)
    e = edge_rows(store)
    assert e[("Deep Work", "Cal Newport")]["explanation"] == "Deep Work was written by Cal Newport"
    assert e[("Deep Work", "Cal Newport")]["context"]["type"] == "authored_by"
    assert e[("Attention residue", "Deep Work")]["explanation"] == ""  # not invented
    assert report.edges_no_explanation == 1 and report.edges == 8


def test_february_2026_event_dates_keep_their_precision(store, tmp_path):
    report = import_raha(store, without_dimension_tables(make_feb2026(tmp_path / "feb.sqlite")))
    n = titles(store)
    for rid, (raw, want) in FEB_EVENT_DATES.items():
        node = n[f"Event {rid}"]
        assert node["event_date"] == want, raw
        assert node["metadata"]["raha"].get("event_date_raw") == (None if want else str(raw))
    assert ("node 16", "event date 'last summer' is not a date; kept as metadata.raha.event_date_raw") \
        in report.warnings
    assert (report.event_dates, report.event_dates_kept, report.event_dates_partial, report.event_dates_converted,
            report.event_dates_unreadable) == (8, 1, 2, 4, 1)
    memory = n["Prefers short answers"]
    assert memory["type"] == "memory" and report.type_from_metadata == 1  # metadata.type
    assert memory["source"] == "The user asked for brevity twice.\n\n## Notes\n\na note kept beside\n"
    assert n["Event 10"]["dimensions"] == ["events"]


def test_february_2026_dimension_tables_are_merged(store, tmp_path):
    import_raha(store, make_feb2026(tmp_path / "feb.sqlite"))
    n = titles(store)
    assert n["Prefers short answers"]["dimensions"] == ["memory"]
    assert n["Event 10"]["dimensions"] == ["events", "papers"]


def test_february_2026_edges_newer_explanation_wins_and_skips_are_counted(store, tmp_path):
    report = import_raha(store, without_dimension_tables(make_feb2026(tmp_path / "feb.sqlite")))
    e = edge_rows(store)
    edited = e[("Event 10", "Event 11")]
    assert edited["explanation"] == "Edited in RA-H: the paper came out after the birth"  # the UI's edit
    assert edited["context"]["raha_context"]["explanation"] == edited["explanation"]  # context kept whole
    assert edited["context"]["confidence"] == 0.8
    assert e[("Event 11", "Event 12")]["explanation"] == "Column written at creation"  # same time: the column
    assert e[("Event 12", "Event 13")]["explanation"] == ""  # the first row of the pair, unexplained
    assert e[("Event 14", "Event 10")]["explanation"] == "Only in context"
    assert (report.edges_read, report.edges, report.edges_created) == (11, 8, 8)
    assert (report.edges_dangling, report.edges_self, report.edges_duplicate, report.edges_skipped) == (1, 1, 1, 3)
    assert report.edges_explanation_from_context == 2 and report.edges_no_explanation == 1
    kinds = report.as_dict()["kinds"]
    assert kinds["edges"]["duplicate"] == 1 and kinds["event_dates"]["unreadable"] == 1
    assert kinds["nodes"]["memory"] == 1 and kinds["dimensions"]["from"] == "metadata"


def test_april_2026_dimensions_from_the_migration_snapshot(store, tmp_path):
    report = import_raha(store, make_apr2026(tmp_path / "apr.sqlite"))
    n = titles(store)
    assert n["Zettelkasten"]["dimensions"] == ["pkm", "method", "notes"]
    assert n["Niklas Luhmann"]["dimensions"] == ["people"]
    assert n["User likes slip boxes"]["type"] == "memory"
    assert n["Zettelkasten"]["event_date"] == "1950" and n["Index cards"]["event_date"] == "2024-08"
    assert report.dimensions_from == "metadata + migration snapshot"
    assert (report.dimensions_snapshot, report.dimensions_metadata, report.dimensions_assigned) == (4, 1, 5)
    assert edge_rows(store)[("Niklas Luhmann", "Index cards")]["explanation"] == ""


def test_bad_snapshot_payload_is_reported_not_fatal(store, tmp_path):
    src = make_apr2026(tmp_path / "apr.sqlite")
    c = sqlite3.connect(src)
    c.execute("INSERT INTO dimension_migration_snapshots VALUES (2, '2026-04-11', 0, 0, 'not json')")
    c.execute("INSERT INTO dimension_migration_snapshots VALUES (3, '2026-04-12', 1, 1, ?)",
              (json.dumps([{"dimension": "orphan"}, {"node_id": 23, "dimension": "cards"}]),))
    c.commit()
    c.close()
    report = import_raha(store, src)
    assert ("dimension snapshot 2", "its payload is not a JSON list; no dimension was read from it") in report.warnings
    assert report.dimensions_skipped == 1 and titles(store)["Index cards"]["dimensions"] == ["cards"]


def test_older_edges_table_from_id_to_id_description(store, tmp_path):
    report = import_raha(store, make_from_id_edges(tmp_path / "old.sqlite"))
    assert report.created == 3 and report.edge_table.startswith("edges(from_id, to_id, description)")
    assert edges(store) == {("As We May Think", "Memex", "The essay describes the memex"),
                            ("Memex", "Hypertext", "")}
    assert report.edges_duplicate == 1 and report.edges_no_explanation == 1
    assert titles(store)["Memex"]["type"] == "idea"


@pytest.mark.parametrize("era", sorted(ERAS))
def test_reimport_of_every_era_is_idempotent(store, tmp_path, era):
    src = ERAS[era](tmp_path / f"{era}.sqlite")
    first = import_raha(store, src)
    count = store.counts()
    again = import_raha(store, src)
    assert (again.created, again.updated, again.unchanged) == (0, 0, first.created)
    assert (again.edges_created, again.edges_updated, again.edges_removed) == (0, 0, 0)
    assert again.edges_unchanged == first.edges_created and store.counts() == count


def test_reimport_replaces_the_sentence_an_older_import_invented(store, tmp_path):
    src = make_from_id_edges(tmp_path / "old.sqlite")
    import_raha(store, src)
    edge = next(r for r in store.db.execute("SELECT id, context FROM edges WHERE explanation = ''"))
    invented = "Related (imported from RA-H OS without an explanation)"
    store.db.execute("UPDATE edges SET explanation = ?, context = json_set(context, '$.raha_explanation', ?)"
                     " WHERE id = ?", (invented, invented, edge["id"]))
    report = import_raha(store, src)
    assert report.edges_updated == 1 and store.get_edge(edge["id"])["explanation"] == ""


@pytest.mark.parametrize("era", sorted(ERAS))
def test_cairn_hubs_agree_with_rahas_hub_query(store, tmp_path, era):
    src = ERAS[era](tmp_path / f"{era}.sqlite")
    import_raha(store, src)
    cairn = [(h["title"], h["edge_count"]) for h in store.hubs(10)]
    assert cairn == raha_hubs(src) and cairn
    assert not any("memory" == store.get_node(h["id"])["type"] for h in store.hubs(10))


def test_hubs_on_a_clean_file_match_rahas_query_verbatim(store, tmp_path):
    """December 2025 has no duplicate, self or dangling rows: RA-H's query as it shipped agrees as is."""
    src = make_dec2025(tmp_path / "dec.sqlite")
    import_raha(store, src)
    cairn = [(h["title"], h["edge_count"]) for h in store.hubs(10)]
    assert cairn == raha_hubs(src, imported_edges_only=False)
    assert cairn[:3] == [("Deep Work", 4), ("Attention residue", 3), ("Focus sessions", 3)]  # tie: newer first


def test_event_date_accepts_a_year_or_a_month_and_still_refuses_nonsense(store):
    assert [clean_event_date(v) for v in ("1981", "2024-08", "2024-02-29", " 2024-08 ", None, "")] == \
        ["1981", "2024-08", "2024-02-29", "2024-08", None, None]
    for bad in ("2024-13", "0000", "81", "2024-8", "2023-02-29", "2024-1-1x", "yesterday", "1981-00"):
        with pytest.raises(InvalidInput, match="YYYY-MM-DD"):
            clean_event_date(bad)
    a = store.add_node("A year", event_date="1981")
    b = store.add_node("A month", event_date="1981-03")
    c = store.add_node("A day", event_date="1981-03-02")
    store.add_node("Later", event_date="1982")
    assert store.update_node(a["id"], event_date="1980")["event_date"] == "1980"
    order = [r[0] for r in store.db.execute("SELECT title FROM nodes ORDER BY event_date")]
    assert order == ["A year", "A month", "A day", "Later"]  # text order is time order at any precision
    assert (b["event_date"], c["event_date"]) == ("1981-03", "1981-03-02")


def test_store_refuses_an_empty_explanation_except_for_an_import(store):
    a, b = store.add_node("A")["id"], store.add_node("B")["id"]
    with pytest.raises(InvalidInput, match="must not be empty"):
        store.add_edge(a, b, "  ")
    edge = store.add_edge(a, b, "", allow_empty=True)
    assert edge["explanation"] == ""
    with pytest.raises(InvalidInput, match="must not be empty"):
        store.update_edge(edge["id"], explanation="")
    assert store.update_edge(edge["id"], explanation="Now explained")["explanation"] == "Now explained"


def test_cli_prints_per_kind_and_show_marks_no_explanation(cairn_cmd, cli_env, tmp_path):
    src = make_feb2026(tmp_path / "feb.sqlite")
    db = tmp_path / "cli.db"
    run = subprocess.run([*cairn_cmd, "--db", str(db), "import", str(src), "--no-index"], env=cli_env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = " ".join(run.stdout.split())
    assert "9 nodes: 9 created" in out
    assert "Event dates: 8 (1 full dates, 2 a year or month only, kept so, 4 converted" in out
    assert "1 not a date" in out and "last summer" in out
    assert "skipped 3 (1 dangling, 1 self, 1 duplicate, 0 already linked in Cairn)" in out
    assert "1 without an explanation" in out and "type from metadata 1" in out
    run = subprocess.run([*cairn_cmd, "--db", str(db), "import", str(src), "--json", "--no-index"], env=cli_env,
                         capture_output=True, text=True, timeout=120)
    data = json.loads(run.stdout)
    assert data["kinds"]["nodes"]["unchanged"] == 9 and data["kinds"]["edges"]["unchanged"] == 8
    store_ids = subprocess.run([*cairn_cmd, "--db", str(db), "list", "--json", "--limit", "50"], env=cli_env,
                               capture_output=True, text=True, timeout=120)
    node = next(x for x in json.loads(store_ids.stdout) if x["title"] == "Event 12")
    run = subprocess.run([*cairn_cmd, "--db", str(db), "show", str(node["id"])], env=cli_env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stdout.splitlines() if "Event 13" in x)
    assert "no explanation yet" in line
    hubs = subprocess.run([*cairn_cmd, "--db", str(db), "hubs", "--json"], env=cli_env,
                          capture_output=True, text=True, timeout=120)
    assert [(h["title"], h["edge_count"]) for h in json.loads(hubs.stdout)] == raha_hubs(src)


async def test_focus_marks_an_edge_without_explanation(store, db_path, monkeypatch, tmp_path):
    from rich.console import Group
    from rich.padding import Padding
    from textual.widgets import OptionList

    from tui.app import CairnApp
    from tui.widgets.chat_pane import ChatPane
    from tui.widgets.focus_panel import FocusPanel
    from tui_support import settle

    monkeypatch.setattr(ChatPane, "set_focus", lambda self, focus: None)
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    import_raha(store, make_from_id_edges(tmp_path / "old.sqlite"))
    memex = titles(store)["Memex"]["id"]

    def plain(prompt) -> str:
        if isinstance(prompt, Group):
            return "\n".join(plain(r) for r in prompt.renderables)
        return plain(prompt.renderable) if isinstance(prompt, Padding) else str(prompt)

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        app.query_one(FocusPanel).open_node(memex)
        await settle(app, pilot)
        options = app.query_one(FocusPanel).view(memex).query_one(".node-edges", OptionList)
        texts = [plain(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        hyper = next(t for t in texts if "Hypertext" in t)
        assert hyper.splitlines()[1].strip() == "no explanation yet"
        essay = next(t for t in texts if "As We May Think" in t)
        assert "The essay describes the memex" in essay
        prompt = options.get_option_at_index(texts.index(hyper)).prompt
        assert "dim" in str(prompt.renderables[1].renderable.style)


def test_march_2026_private_nodes_get_the_private_dimension(store, tmp_path, cairn_cmd, cli_env):
    """RA-H's `is_private` (March 2026) becomes the dimension `private`, which privacy.never_send can
    keep from remote providers; `cairn import` says so, and what to add when never_send lacks it."""
    src = make_apr2026(tmp_path / "mar.sqlite")
    c = sqlite3.connect(src)
    c.execute("ALTER TABLE nodes ADD COLUMN is_private INTEGER NOT NULL DEFAULT 0")
    c.execute("UPDATE nodes SET is_private = 1 WHERE id = 21")
    c.commit()
    c.close()
    report = import_raha(store, src)
    assert report.private == 1 and report.as_dict()["kinds"]["nodes"]["private"] == 1
    assert titles(store)["Niklas Luhmann"]["dimensions"] == ["people", "private"]
    assert "private" not in titles(store)["Zettelkasten"]["dimensions"]
    db = tmp_path / "cli.db"
    run = subprocess.run([*cairn_cmd, "--db", str(db), "import", str(src), "--no-index"], env=cli_env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "1 node private in RA-H got the dimension `private`; add it to never_send" in run.stdout


def _upgraded_by_raha(path: Path) -> Path:
    """A December 2025 file as RA-H's own February and May 2026 migrations leave it: the new `source`
    filled from the old summary (`content`, then renamed `notes`), the full text still in `chunk` and in
    the `chunks` rows."""
    c = sqlite3.connect(path)
    c.executescript("""
        ALTER TABLE nodes ADD COLUMN source TEXT;
        UPDATE nodes SET source = content;
        ALTER TABLE nodes RENAME COLUMN content TO notes;
    """)
    c.commit()
    c.close()
    return path


def test_a_file_raha_upgraded_itself_comes_in_with_its_longest_text(store, tmp_path, monkeypatch):
    """Issue 24: RA-H's migrations put the summary in `source`; Cairn read `source` whenever it was not
    empty, so the node came in as its summary (24 characters against 10,829). The longest faithful text
    is taken, the summary becomes the description, the report names the node, and a re-import fixes a
    node an earlier import brought in short."""
    import core.vault.raha as raha

    src = _upgraded_by_raha(without_dimension_tables(make_dec2025(tmp_path / "dec.sqlite")))
    with sqlite3.connect(src) as c:
        c.execute("UPDATE nodes SET source = 'A book on focus.', notes = 'A book on focus.', description = NULL"
                  " WHERE title = 'Deep Work'")
        full = c.execute("SELECT chunk FROM nodes WHERE title = 'Deep Work'").fetchone()[0]
    real = raha._node_text
    monkeypatch.setattr(raha, "_node_text", lambda row, cols, report, chunk_rows="": (
        raha._text(row["source"]), raha._text(row["description"]) if "description" in cols else "",
        {"text_from_chunk": 0, "text_from_content": 0, "description_from_content": 0, "summary_appended": 0,
         "text_longer_than_source": 0}))
    import_raha(store, src)  # as the earlier import did: the summary as the text
    assert titles(store)["Deep Work"]["source"] == "A book on focus."
    monkeypatch.setattr(raha, "_node_text", real)
    report = import_raha(store, src)
    node = titles(store)["Deep Work"]
    assert node["source"] == full and len(full) > 500
    assert node["description"] == "A book on focus." and "## Notes" not in node["source"]
    assert report.updated >= 1
    assert any(where.startswith("node ") and "`chunk`" in why and "the description" in why
               for where, why in report.warnings), report.warnings


def test_an_rfc_2822_date_is_converted_and_an_ambiguous_one_kept_raw():
    """Issue 24: `Mon, 25 Nov 2024 10:00:00 GMT` (an RSS or e-mail date) was kept raw; it is a date, in the
    calendar day it was written in. A date that could be read two ways stays unread (kept raw, warned)."""
    from core.vault.raha import event_date

    assert event_date("Mon, 25 Nov 2024 10:00:00 GMT") == ("2024-11-25", "converted")
    assert event_date("25 Nov 2024 23:30:00 -0500") == ("2024-11-25", "converted")  # its own day, not UTC's
    assert event_date("Tue, 31 Nov 2024 10:00:00 GMT") == (None, "unreadable")  # no such day
    assert event_date("03/04/2024") == (None, "unreadable")  # March 4 or 3 April: not guessed


def _splitter_rows(text: str) -> list[str]:
    """Pieces as RA-H's chunking (LangChain's RecursiveCharacterTextSplitter, separator kept at the start of
    the next piece, each piece trimmed) leaves them where no overlap fits: the whitespace between pieces is
    gone, so no join gives the text back verbatim."""
    parts = re.split(r"(?=\. )|(?=\n)", text)
    rows, current = [], ""
    for part in parts:
        if len(current) + len(part) > 300 and current:
            rows.append(current.strip())
            current = ""
        current += part
    rows.append(current.strip())
    return [r for r in rows if r]


def _raha_lifecycle(tmp_path: Path) -> dict[str, Path]:
    """One RA-H database as December 2025 wrote it, then as RA-H's February code (content renamed notes) and
    its May code (source added and filled from notes before chunk) left it; hand-written SQL in the shapes
    bench/raha_real.py measured on files RA-H's own code made and migrated."""
    page = "\n".join(f"Line {i} says the page goes on. It holds a claim. And a second one, longer." for i in range(40))
    excerpt = "A short excerpt the user clipped."
    own_notes = "The user's own notes on the excerpt, longer than it: " + "a thought. " * 40
    dec = tmp_path / "dec.sqlite"
    c = sqlite3.connect(dec)
    c.executescript("""
        CREATE TABLE nodes (id INTEGER PRIMARY KEY, title TEXT, description TEXT, content TEXT, link TEXT,
            type TEXT, created_at TEXT, updated_at TEXT, metadata TEXT, chunk TEXT, embedding BLOB,
            embedding_updated_at TEXT, embedding_text TEXT, chunk_status TEXT DEFAULT 'not_chunked');
        CREATE TABLE chunks (id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL, chunk_idx INTEGER, text TEXT,
            created_at TEXT, embedding_type TEXT, metadata TEXT);
        CREATE TABLE edges (id INTEGER PRIMARY KEY, from_node_id INTEGER NOT NULL, to_node_id INTEGER NOT NULL,
            source TEXT, created_at TEXT, context TEXT, user_feedback INTEGER);
    """)
    c.executemany("INSERT INTO nodes (id, title, content, link, created_at, updated_at, metadata, chunk, chunk_status)"
                  " VALUES (?, ?, ?, ?, '2025-12-20T10:00:00.000Z', '2025-12-20T10:00:00.000Z', ?, ?, 'chunked')", [
                      (1, "A long page", "Website content from example.org", "https://example.org/p",
                       json.dumps({"published_date": "Mon, 25 Nov 2024 10:00:00 GMT"}), page),
                      (2, "Clipped excerpt", own_notes, None, "{}", excerpt)])
    c.executemany("INSERT INTO chunks (node_id, chunk_idx, text) VALUES (?, ?, ?)",
                  [(1, i, t) for i, t in enumerate(_splitter_rows(page))] + [(2, 0, excerpt)])
    c.commit()
    c.close()
    feb, may, may_from_dec = (tmp_path / f"{n}.sqlite" for n in ("feb", "may", "may_from_dec"))
    shutil.copy(dec, feb)
    with sqlite3.connect(feb) as c:
        c.executescript("""
            ALTER TABLE nodes RENAME COLUMN content TO notes;
            ALTER TABLE nodes ADD COLUMN event_date TEXT;
            UPDATE nodes SET event_date = json_extract(metadata, '$.published_date')
             WHERE json_extract(metadata, '$.published_date') IS NOT NULL;
        """)
    for src, dest, summary in ((feb, may, "notes"), (dec, may_from_dec, "content")):
        shutil.copy(src, dest)
        with sqlite3.connect(dest) as c:
            c.executescript(f"""
                ALTER TABLE nodes ADD COLUMN source TEXT;
                UPDATE nodes SET source = {summary}, chunk_status = 'not_chunked'
                 WHERE (source IS NULL OR LENGTH(TRIM(source)) = 0) AND LENGTH(TRIM({summary})) > 0;
                UPDATE nodes SET source = chunk WHERE (source IS NULL OR LENGTH(TRIM(source)) = 0)
                   AND LENGTH(TRIM(chunk)) > 0;
            """)
    return {"dec": dec, "feb": feb, "may": may, "may_from_dec": may_from_dec, "page": page, "excerpt": excerpt,
            "own_notes": own_notes}


def test_raha_upgrades_by_its_own_code_come_in_alike_and_whole(tmp_path):
    """Issue 24, measured on files RA-H's own code made and migrated (bench/raha_real.py): (1) the chunks
    rows lose the whitespace between pieces, so their join is a few characters longer than `chunk` without
    holding one more word: the verbatim `chunk` is the text, not the join; (2) May's migration copies
    `notes` into `source` even where the notes are longer than `chunk` (an excerpt with long notes): the
    excerpt stays the text, the notes a Summary section, nothing dropped and the node named; (3) February's
    `notes` is December's `content` renamed: the summary becomes the description there too. The same RA-H
    node comes in identically from all four files."""
    from core.graph.store import Store

    files = _raha_lifecycle(tmp_path)
    rows = _splitter_rows(files["page"])
    assert len("\n\n".join(rows)) != len(files["page"])  # the shape: no join of the rows is verbatim
    got, reports = {}, {}
    for era in ("dec", "feb", "may", "may_from_dec"):
        store = Store(tmp_path / f"cairn-{era}.db")
        try:
            reports[era] = import_raha(store, files[era])
            got[era] = {n["title"]: (n["source"], n["description"], n["event_date"]) for n in titles(store).values()}
        finally:
            store.close()
    page, clipped = got["dec"]["A long page"], got["dec"]["Clipped excerpt"]
    assert page == (files["page"], "Website content from example.org", "2024-11-25")
    assert clipped[0] == f"{files['excerpt']}\n\n## Summary\n\n{files['own_notes'].strip()}\n" and clipped[1] == ""
    for era in ("feb", "may", "may_from_dec"):
        assert got[era] == got["dec"], era
    for era in ("may", "may_from_dec"):
        warned = dict(reports[era].warnings)
        assert "`chunk`" in warned["node 1"] and "the description" in warned["node 1"]
        assert f"`source` held {len(files['own_notes'].strip()):,} characters" in warned["node 2"] and "a Summary section" in warned["node 2"]
    assert not [w for w in reports["dec"].warnings + reports["feb"].warnings if "`source`" in w[1]]
