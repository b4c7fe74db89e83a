"""Hostile input (issue 7): property tests that feed every entry point text a person (or a model, or a
downloaded vault) could throw at it, and check it never crashes, never escapes its bounds, and never
writes what it should not.

Hypothesis runs derandomized (the same examples on every run), so a failure here is reproducible.
"""

from __future__ import annotations

import os
import shutil
import sqlite3 as std_sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.search import browse
from core.search import fts_query
from core.index.chunker import Chunker
from core.graph.store import Store

SETTINGS = dict(derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow,
                                                                          HealthCheck.data_too_large])

# -- strategies ----------------------------------------------------------------------------------
FTS_PIECES = ['"', "'", "(", ")", "*", "-", ":", "^", "\x00", " ", "  ", "\t", "\n", "{", "}", "+", ",", ".",
              "AND", "OR", "NOT", "NEAR", "and", "or", "not", "near", "Near", "NEAR(", "NEAR/2", "title:", "{title}",
              "c++", "a:b", "it's", "-x", "x*", "*x", "\"\"", "\"*", "-\"", "é", "e\u0301", "😀", "\u202e", "\u0301",
              "\ue000", "日本語", "١٢٣", "x", "ab", "abc", "the", "a", "__", "\\", "\u00ad", "\ufeff"]
fts_texts = st.one_of(
    st.lists(st.sampled_from(FTS_PIECES), max_size=12).map("".join),
    st.lists(st.one_of(st.sampled_from(FTS_PIECES), st.text(max_size=4)), max_size=10).map("".join),
    st.text(max_size=40),
)


@pytest.fixture(scope="module")
def fts_store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("fts") / "fts.db")
    s.add_node("Alpha and the running dogs", "c++ templates; a:b NEAR or NOT; naïve café 😀 日本語 text")
    s.add_node("Beta", "the quick brown fox", description="descriptive words")
    yield s
    s.close()


def _match(store: Store, expr: str) -> list[int]:
    return [r[0] for r in store.db.execute("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?", (expr,)).fetchall()]


# -- the search query builder ----------------------------------------------------------------------
@settings(max_examples=400, **SETTINGS)
@given(text=fts_texts, mode=st.sampled_from(["or", "and"]))
@example(text='"', mode="or")
@example(text="NEAR(a b)", mode="and")
@example(text="-", mode="or")
@example(text="\x00*", mode="or")
@example(text="title:x OR ^y", mode="and")
def test_fts_build_is_none_or_a_valid_match_expression(fts_store, text, mode):
    expr = fts_query.build(text, mode=mode)
    if expr is None:
        return
    assert isinstance(expr, str) and expr
    assert "\x00" not in expr
    _match(fts_store, expr)  # raises sqlite3.OperationalError on a syntax error


@settings(max_examples=400, **SETTINGS)
@given(text=fts_texts)
@example(text="ab")
@example(text='x "ab')
@example(text="-ab")
@example(text="title:ab")
@example(text="the ab")
@example(text="c++ ab")
@example(text="x \u0301\u0301")
def test_browse_fts_expression_is_none_or_valid(fts_store, text):
    expr = browse._fts_expression(text)
    if expr is None:
        return
    assert "\x00" not in expr
    _match(fts_store, expr)


def test_fts_build_finds_operator_words_as_plain_text(fts_store):
    """Operator words and punctuation are searched as words, never interpreted."""
    assert _match(fts_store, fts_query.build("NEAR", mode="and")) == [1]
    assert _match(fts_store, fts_query.build("c++", mode="and")) == [1]
    assert fts_query.build("-fox") is None  # exclusion only: match nothing
    assert fts_query.build('"') is None and fts_query.build("*:^()") is None


# -- the markdown chunker -------------------------------------------------------------------------
MD_PIECES = ["# Heading", "## Sub", "###### Deep", "#NoSpace", "```", "~~~", "```python", "    code", "\n", "\r\n",
             "\r", "\n\n", " ", "\t", "word", "Sentence one. ", "Really?! ", "End…", "\"Quoted.\" ", "😀", "👩‍👩‍👧",
             "e\u0301", "\u0301", "\u200d", "日本語の文章。", "- item", "> quote", "[[link]]", "\x00", "\u2028",
             "\u00a0", "\ufeff", "a" * 300, "supercalifragilistic" * 20, "x" * 3000]
md_texts = st.one_of(
    st.lists(st.sampled_from(MD_PIECES), max_size=40).map("".join),
    st.lists(st.one_of(st.sampled_from(MD_PIECES), st.text(max_size=10)), max_size=25).map("".join),
)


@pytest.fixture(scope="module")
def small_chunker(embedder):
    # A small window so a few hundred characters already exercise sentence and token splitting.
    return Chunker.for_embedder(embedder, max_tokens=24, overlap_tokens=6)


@pytest.fixture(scope="module")
def default_chunker(embedder):
    return Chunker.for_embedder(embedder)


def _check_chunks(chunker: Chunker, source: str) -> None:
    chunks = chunker.split(source)
    last_start = -1
    for i, c in enumerate(chunks):
        assert c.idx == i
        assert 0 <= c.start_char < c.end_char <= len(source)
        assert source[c.start_char:c.end_char] == c.text
        assert c.text.strip(), "an empty chunk"
        assert c.start_char >= last_start, "chunks go backwards"
        last_start = c.start_char
        assert chunker.count(c.text) <= chunker.max_tokens, (c.text, chunker.count(c.text))
        c.content_hash  # noqa: B018 (hashable whatever the text)
    # Every non-blank character of the source is in some chunk (nothing lost between chunks).
    covered = [False] * len(source)
    for c in chunks:
        covered[c.start_char:c.end_char] = [True] * (c.end_char - c.start_char)
    lost = [ch for ch, cov in zip(source, covered) if not cov and not ch.isspace()]
    assert not lost, lost


@settings(max_examples=150, **SETTINGS)
@given(source=md_texts)
@example(source="# A\r\n\r\ntext\r\n```\r\n# not a heading\r\n```\r\n## B\r\nmore")
@example(source="x" * 5000)
@example(source="😀" * 500)
@example(source="e\u0301" * 400)
@example(source="```\nunclosed fence\n# heading inside")
def test_chunk_offsets_slice_the_source(small_chunker, source):
    _check_chunks(small_chunker, source)


@settings(max_examples=30, **SETTINGS)
@given(source=md_texts)
def test_chunk_offsets_slice_the_source_default_size(default_chunker, source):
    _check_chunks(default_chunker, source)


# -- the vault importer ---------------------------------------------------------------------------
name_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00")
file_names = st.one_of(
    st.text(name_chars, min_size=1, max_size=20),
    st.sampled_from(["a b c", "dots.in.name", "..md", "x.MD", "ünïcödé", "😀", " lead", "trail ", "-dash", "#tag",
                     "[[x]]", "CON", "NUL", "a\tb", "new\nline", "\u202eevil", "x" * 200, "é" * 100]),
)
GOOD_BODIES = [
    b"plain text",
    b"# Title\n\nbody with [[link]] and #tag",
    b"---\ntitle: ok\ntags: [a, b]\n---\nbody",
    b"---\nunclosed frontmatter\nbody",
    b"---\n: : invalid: [yaml\n---\nbody",
    b"---\n- a\n- list\n---\nbody",
    b"---\njust a scalar\n---\nbody",
    b"---\n\tkey:\ttabs\n---\nbody",
    b"---\ntitle: [1, 2]\naliases: {a: b}\ndate: not-a-date\ntags: 5\n---\nbody",
    b"---\ntitle: \"\"\n---\n",
    b"---\r\ntitle: crlf\r\n---\r\nbody\r\n",
    b"\xef\xbb\xbf---\ntitle: bom\n---\nbody",
    b"---\n---\n",
    b"",
    b"   \n\t\n",
    b"---\na: &a [1,2]\nb: [*a,*a,*a]\n---\nbody",
    b"```\n# not a title\n",
    "emoji 😀 and combining e\u0301 \u202e".encode(),
]
BAD_BODIES = [b"nul \x00 byte", b"invalid \xff\xfe utf-8", b"\x80", b"ok start then \xc3"]


@st.composite
def vault_trees(draw):
    """[(relative path, bytes, good?)]: unique paths, some nested, note suffixes only."""
    n = draw(st.integers(1, 7))
    files, seen = [], set()
    for i in range(n):
        depth = draw(st.integers(0, 2))
        parts = [draw(file_names) for _ in range(depth)]
        parts = [p if not p.startswith(".") else "_" + p for p in parts]
        parts = [p.encode()[:100].decode("utf-8", "ignore") or "d" for p in parts]
        stem = draw(file_names)
        stem = stem if not stem.startswith(".") else "_" + stem
        stem = stem.encode()[:200].decode("utf-8", "ignore") or "s"
        rel = "/".join([*parts, stem + draw(st.sampled_from([".md", ".markdown", ".MD"]))])
        folders = {"/".join(rel.split("/")[:k]) for k in range(1, len(rel.split("/")))}
        if rel.lower() in seen or any(f.lower() in seen for f in folders):
            continue
        if any(s.startswith(rel.lower() + "/") for s in seen):
            continue
        seen.add(rel.lower())
        seen.update(f.lower() for f in folders)
        good = draw(st.booleans()) or draw(st.booleans())
        body = draw(st.sampled_from(GOOD_BODIES if good else BAD_BODIES))
        if good:
            body += f"\n\nunique {i}".encode()  # two identical files would be one moved note
        files.append((rel, body, good))
    return files


def _write_tree(root: Path, files) -> None:
    for rel, data, _ in files:
        path = root.joinpath(*rel.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@settings(max_examples=80, **SETTINGS)
@given(files=vault_trees())
def test_vault_import_never_crashes_skips_bad_files_and_is_idempotent(tmp_path, files):
    from core.vault.sync import import_vault

    work = Path(tempfile.mkdtemp(dir=tmp_path))
    root = work / "vault"
    root.mkdir()
    _write_tree(root, files)
    good = {rel for rel, _, ok in files if ok}
    bad = {rel for rel, _, ok in files if not ok}
    with Store(work / "v.db") as store:
        report = import_vault(store, root)
        assert {p for p, _ in report.skipped} == bad
        for _, reason in report.skipped:
            assert reason and ("NUL" in reason or "UTF-8" in reason), reason
        assert report.created == len(good), (report.created, report.skipped, report.warnings)
        assert store.counts()["nodes"] == len(good)
        paths = {r["path"] for r in store.db.execute(
            "SELECT json_extract(metadata, '$.vault.path') AS path FROM nodes").fetchall()}
        assert paths == good
        again = import_vault(store, root)
        assert (again.created, again.updated, again.restored, again.renamed, again.trashed) == (0, 0, 0, [], [])
        assert again.unchanged == len(good)
        assert {p for p, _ in again.skipped} == bad
        assert store.counts()["nodes"] == len(good)
    shutil.rmtree(work)


def test_vault_import_skips_a_20mb_file_and_imports_the_rest(tmp_path, capsys):
    """Through `cairn import` (main), as a person runs it; the huge file is written once."""
    from tui.cli.main import main

    root = tmp_path / "vault"
    (root / "deep" / "er").mkdir(parents=True)
    with open(root / "huge.md", "wb") as fh:
        line = b"a line of markdown text that repeats to twenty megabytes\n"
        fh.write(line * (20_000_000 // len(line) + 1))
    (root / "deep" / "er" / "small note.md").write_text("---\ntitle: [unclosed\n---\nhello", encoding="utf-8")
    (root / "bad utf8.md").write_bytes(b"\xff\xfe")
    (root / "ok.md").write_text("# Fine\n\ntext", encoding="utf-8")
    db = tmp_path / "c.db"
    rc = main(["import", str(root), "--db", str(db), "--no-index", "--json"])
    assert rc == 0
    import json as _json

    report = _json.loads(capsys.readouterr().out)
    skipped = dict(report["skipped"])
    assert set(skipped) == {"huge.md", "bad utf8.md"}
    assert "too large" in skipped["huge.md"] and "UTF-8" in skipped["bad utf8.md"]
    assert report["created"] == 2
    rc = main(["import", str(root), "--db", str(db), "--no-index"])
    out = capsys.readouterr()
    assert rc == 0 and "Traceback" not in out.err
    with Store(db) as store:
        assert store.counts()["nodes"] == 2


# -- the command line -----------------------------------------------------------------------------
odd_ints = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["0", "-1", "1", "2", "9" * 30, "-" + "9" * 30, "", " ", "1e3", "0x10", "١", "½", "nan", "--",
                     "1 ", " 1", "+1", "00001", "9223372036854775807", "9223372036854775808"]),
)
odd_text = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
    st.sampled_from(["", " ", "-", "-x", "--", "--json", "-x -y", "[bold]x[/bold]", "\x1b[31mred", "\u202e", "😀",
                     "NEAR(", '"', "*", "a" * 600, "\n", "\x00"]),
)


@st.composite
def argvs(draw):
    verb = draw(st.sampled_from(["add", "search", "show", "link", "rm"]))
    if verb == "add":
        argv = ["add", draw(odd_text)]
        if draw(st.booleans()):
            argv += ["--title", draw(odd_text)]
        if draw(st.booleans()):
            argv += ["--event-date", draw(odd_text)]
        if draw(st.booleans()):
            argv += ["-d", draw(odd_text)]
    elif verb == "search":
        argv = ["search", draw(odd_text), "--mode", "fts"]
        if draw(st.booleans()):
            argv += ["--limit", draw(odd_ints)]
        if draw(st.booleans()):
            argv += ["--node", draw(odd_ints)]
    elif verb == "show":
        argv = ["show", draw(odd_ints)]
    elif verb == "link":
        argv = ["link", draw(odd_ints), draw(odd_ints), "-e", draw(odd_text)]
    else:
        argv = ["rm", draw(odd_ints), "--yes"]
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@pytest.fixture(scope="module")
def cli_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "cli.db"
    with Store(path) as s:
        a = s.add_node("First", "one")
        b = s.add_node("Second", "two")
        s.add_edge(a["id"], b["id"], "first to second")
    return path


@settings(max_examples=200, **SETTINGS)
@given(argv=argvs())
@example(argv=["show", "9" * 30])
@example(argv=["show", "-1"])
@example(argv=["search", "-x", "--mode", "fts"])
@example(argv=["search", "--mode", "fts", "--", "-x"])
@example(argv=["search", "x", "--mode", "fts", "--limit", str(2**70)])
@example(argv=["search", "x", "--mode", "fts", "--limit", "-5"])
@example(argv=["search", "x", "--mode", "fts", "--node", str(2**70)])
@example(argv=["link", "1", "1", "-e", "self"])
@example(argv=["link", "1", str(2**63), "-e", "x"])
@example(argv=["rm", str(2**63), "--yes"])
@example(argv=["add", "", "--title", " "])
@example(argv=["add", "x", "--event-date", "\x1b[2J\n2020-13-01"])
def test_cli_main_returns_an_exit_code_and_one_line_errors(cli_db, capsys, monkeypatch, argv):
    from tui.cli.main import main

    monkeypatch.delenv("CAIRN_DEBUG", raising=False)
    try:
        rc = main([*argv, "--db", str(cli_db)] if "--" not in argv else
                  [*argv[:argv.index("--")], "--db", str(cli_db), *argv[argv.index("--"):]])
    except SystemExit as exc:  # argparse's usage error (exit 2), the documented way a bad flag ends
        out = capsys.readouterr()
        assert exc.code == 2, (argv, exc.code)
        assert "usage:" in out.err and "error:" in out.err.strip().splitlines()[-1]
        assert "Traceback" not in out.err
        return
    out = capsys.readouterr()
    assert isinstance(rc, int) and rc in (0, 1), (argv, rc, out.err)
    assert "Traceback" not in out.err and "Traceback" not in out.out
    if rc == 1:
        assert out.err.startswith("cairn: "), out.err
        assert out.err.count("\n") == 1, ("one line", out.err)
        assert "unexpected error" not in out.err, (argv, out.err)
        assert "\x1b" not in out.err
    else:
        assert out.err == "", out.err
    assert "\x1b" not in out.out


# -- sqliteQuery ----------------------------------------------------------------------------------
REFUSED = [
    "INSERT INTO nodes(title, created_at, updated_at) VALUES ('x', '', '')",
    "UPDATE nodes SET title = 'pwned'",
    "DELETE FROM nodes",
    "DROP TABLE edges",
    "CREATE TABLE evil(x)",
    "CREATE TEMP TABLE evil(x)",
    "CREATE VIEW v AS SELECT 1",
    "ATTACH DATABASE '{dir}/attached.db' AS evil",
    "DETACH DATABASE main",
    "PRAGMA user_version = 5",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA query_only = OFF",
    "PRAGMA writable_schema = ON",
    "SELECT load_extension('x')",
    "SELECT writefile('{dir}/written', 'x')",
    "SELECT fts5_source_id()",
    "WITH x AS (SELECT 1) INSERT INTO nodes(title, created_at, updated_at) SELECT 'x', '', '' FROM x",
    "WITH x AS (SELECT 1) DELETE FROM nodes",
    "SELECT 1; DELETE FROM nodes",
    "SELECT 1; SELECT 2",
    "VACUUM",
    "VACUUM INTO '{dir}/copy.db'",
    "REINDEX",
    "ANALYZE",
    "BEGIN",
    "SAVEPOINT s",
    "INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild')",
    "",
    "   ",
]


@pytest.fixture
def sql_db(tmp_path):
    path = tmp_path / "sql.db"
    with Store(path) as s:
        a = s.add_node("One", "text")
        b = s.add_node("Two", "more")
        s.add_edge(a["id"], b["id"], "one to two")
    return path


def _state(path: Path):
    conn = std_sqlite3.connect(path)
    try:
        return (
            conn.execute("SELECT count(*) FROM nodes").fetchone()[0],
            conn.execute("SELECT count(*) FROM edges").fetchone()[0],
            conn.execute("SELECT group_concat(title, '|') FROM nodes").fetchone()[0],
            conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("PRAGMA journal_mode").fetchone()[0],
            tuple(conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()),
        )
    finally:
        conn.close()


def _runner(path: Path):
    from core.agent.tools import ToolContext, ToolRunner

    return ToolRunner(ToolContext(store=Store(path), searcher=None), ("sqliteQuery",))


@pytest.mark.parametrize("sql", REFUSED)
def test_sqlite_query_refuses_anything_but_reading(sql_db, tmp_path, sql):
    from core.agent.readonly_sql import QueryRefused, run_readonly
    from core.agent.tools import MAX_SQL_ROWS, ToolError

    sql = sql.replace("{dir}", str(tmp_path))
    before = _state(sql_db)
    files_before = sorted(os.listdir(tmp_path))
    with pytest.raises(QueryRefused) as direct:
        run_readonly(sql_db, sql, MAX_SQL_ROWS)
    runner = _runner(sql_db)
    try:
        with pytest.raises(ToolError) as via_tool:
            runner.run("sqliteQuery", {"sql": sql})
    finally:
        runner.ctx.store.close()
    for exc in (direct.value, via_tool.value):
        msg = str(exc)
        ok = msg.startswith(("Refused", "sql must be one SELECT"))
        if "writefile" in sql:  # not compiled into this SQLite at all: an error, never a write
            ok = ok or msg == "SQL error: no such function: writefile"
        assert ok, msg
        assert "\n" not in msg
    assert _state(sql_db) == before
    assert sorted(os.listdir(tmp_path)) == files_before  # nothing attached, written or vacuumed into


@pytest.mark.parametrize("sql, expected", [
    ("SELECT id, title FROM nodes ORDER BY id", [[1, "One"], [2, "Two"]]),
    ("SELECT count(*) FROM edges", [[1]]),
    ("WITH x AS (SELECT id FROM nodes) SELECT count(*) FROM x", [[2]]),
    ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 3) SELECT n FROM c", [[1], [2], [3]]),
    ("SELECT 1;", [[1]]),
    ("SELECT 1; -- a comment after the one statement", [[1]]),
])
def test_sqlite_query_allows_reading(sql_db, sql, expected):
    runner = _runner(sql_db)
    try:
        result = runner.run("sqliteQuery", {"sql": sql})
    finally:
        runner.ctx.store.close()
    assert result["rows"] == expected and result["truncated"] is False


def test_sqlite_query_refuses_pragma_statements_even_read_only_ones(sql_db):
    """Decided: PRAGMA statements are refused outright (the read-only ones included); the schema is
    still readable through SELECT on sqlite_master. The pragma_* table functions are refused too."""
    from core.agent.tools import ToolError

    runner = _runner(sql_db)
    try:
        for sql in ("PRAGMA table_info(nodes)", "PRAGMA user_version", "PRAGMA database_list",
                    "SELECT name FROM pragma_table_info('nodes')"):
            with pytest.raises(ToolError, match="^Refused"):
                runner.run("sqliteQuery", {"sql": sql})
        rows = runner.run("sqliteQuery", {"sql": "SELECT name FROM sqlite_master WHERE name = 'nodes'"})["rows"]
        assert rows == [["nodes"]]
    finally:
        runner.ctx.store.close()


# -- export -----------------------------------------------------------------------------------------
HOSTILE_TITLES = ["../", "..", ".", "../../etc/passwd", "/etc/passwd", "..\\..\\x", "C:\\Windows\\x", "CON", "nul",
                  "COM1", "lpt9.txt", "con.md", "x" * 300, "é" * 300, "😀" * 120, "a/b/c", "a\\b", " .hidden",
                  ".git", "x.md", "X.MD", "x", "X", "tab\there", "new\nline", "\u202e", "[[link]]", "#^|?*<>:\"",
                  "~", "~/x", "$HOME", "%2e%2e%2f", "\x1b[31m", "\x00nul", "a\x00b", "..\x00/"]
titles = st.lists(st.one_of(st.sampled_from(HOSTILE_TITLES),
                            st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)),
                  min_size=1, max_size=8)
vault_paths = st.one_of(st.none(), st.sampled_from(["../../escape.md", "/etc/passwd", "..\\..\\x.md", "a/../../b.md",
                                                     "./././c.md", "CON/NUL.md", "x" * 300 + "/y.md", "",
                                                     "/".join(["d"] * 20) + "/deep.md", "a//b.md", "\x00.md"]))


def _insert_raw(store: Store, title: str, vault_path: str | None) -> None:
    """Straight into the table: titles the store itself refuses (NUL, blank) can still arrive from an old
    database or an import, and export must cope with them."""
    import json

    meta = {"dimensions": []}
    if vault_path is not None:
        meta["vault"] = {"root": "/nowhere", "path": vault_path}
    with store.db.transaction() as conn:
        conn.execute("INSERT INTO nodes(title, description, source, type, metadata, chunk_status, created_at,"
                     " updated_at) VALUES (?, '', 'body', 'note', ?, 'pending', '2020-01-01', '2020-01-01')",
                     (title, json.dumps(meta)))


@settings(max_examples=100, **SETTINGS)
@given(titles=titles, paths=st.lists(vault_paths, min_size=8, max_size=8))
@example(titles=["x", "X", "x", "x.md", "x (1)", "x (2)"], paths=[None] * 8)
@example(titles=["../", "..", ".", "", " "], paths=[None] * 8)
def test_export_never_writes_outside_the_target(tmp_path, titles, paths):
    from core.vault.export import export

    work = Path(tempfile.mkdtemp(dir=tmp_path))
    outside_before = sorted(p.name for p in work.iterdir())
    target = work / "a" / "out"
    with Store(work / "e.db") as store:
        for title, vault_path in zip(titles, paths):
            _insert_raw(store, title, vault_path)
        report = export(store, target)
        nodes = store.counts()["nodes"]
    assert report.skipped == [] and report.written == nodes == len(titles)
    real = os.path.realpath(target)
    written = []
    for dirpath, dirnames, filenames in os.walk(work):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if full == str(work / "e.db") or full.startswith(str(work / "e.db")):
                continue
            assert os.path.realpath(full).startswith(real + os.sep), full
            assert not os.path.islink(full)
            if name.endswith(".md"):
                written.append(full)
    assert len(written) == nodes
    assert len({w.casefold() for w in written}) == nodes  # no collision, even ignoring case
    for w in written:
        for part in Path(w).relative_to(real).parts:
            assert part not in ("", ".", "..") and not part.startswith(".")
            assert len(part.encode()) <= 255
            assert "\x00" not in part and "\\" not in part
            assert part.split(".")[0].strip().upper() not in ("CON", "PRN", "AUX", "NUL", "COM1", "LPT9")
    assert sorted(p.name for p in work.iterdir() if p.name != "a" and not p.name.startswith("e.db")) == [
        n for n in outside_before if n != "a" and not n.startswith("e.db")]
    shutil.rmtree(work)
