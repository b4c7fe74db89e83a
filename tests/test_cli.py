"""The `cairn` command line, run as a real process (the installed console script) on real files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

NODE_KEYS = {"id", "title", "description", "source", "link", "event_date", "type", "dimensions",
             "chunk_status", "created_at", "updated_at"}
CHUNK_KEYS = {"idx", "start_char", "end_char", "heading_path", "text", "page"}
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)$")


def _clean_env(env: dict) -> dict:
    env = dict(env)
    # Rich must see a pipe, not a terminal told to emit colour anyway.
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CAIRN_DEBUG", "COLUMNS"):
        env.pop(var, None)
    return env


def run(cmd, env, *args, input: bytes | str | None = None, check_rc: int | None = None):
    """Run cairn; stdout/stderr decoded as UTF-8. stdin is /dev/null unless input is given (never a tty)."""
    if isinstance(input, str):
        input = input.encode("utf-8")
    proc = subprocess.run(
        [*cmd, *map(str, args)], env=_clean_env(env), input=input,
        stdin=subprocess.DEVNULL if input is None else None, capture_output=True, timeout=120,
    )
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    result.raw_stdout = proc.stdout
    if check_rc is not None:
        assert proc.returncode == check_rc, f"{args}: rc={proc.returncode}\nstdout={out}\nstderr={err}"
    return result


def ok(cmd, env, *args, input=None):
    return run(cmd, env, *args, input=input, check_rc=0)


def jrun(cmd, env, *args, input=None):
    return json.loads(ok(cmd, env, *args, "--json", input=input).stdout)


def fails(cmd, env, *args, input=None):
    r = run(cmd, env, *args, input=input, check_rc=1)
    assert r.stderr.startswith("cairn: "), r.stderr
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    return r


def add(cmd, env, *args, input=None) -> int:
    out = ok(cmd, env, "add", *args, input=input).stdout
    assert re.fullmatch(r"\d+\n", out), out
    return int(out)


@pytest.fixture
def cli(cairn_cmd, cli_env, tmp_path):
    """(cmd, env, db path): every call gets `--db` so tests never depend on CAIRN_HOME except where they check it."""
    Path(cli_env["HOME"]).mkdir(parents=True, exist_ok=True)
    return cairn_cmd, cli_env, tmp_path / "cli.db"


def _init_db(path: Path) -> None:
    from core.graph.store import Store

    Store(path).close()


# -- add -----------------------------------------------------------------------------------------
def test_add_prints_id(cli):
    cmd, env, db = cli
    first = add(cmd, env, "A first note about otters", "--db", db)
    second = add(cmd, env, "A second note", "--db", db)
    assert second == first + 1
    node = jrun(cmd, env, "show", first, "--db", db)
    assert node["source"] == "A first note about otters"
    assert node["title"] == "A first note about otters"
    assert node["chunk_status"] == "pending"


def test_add_json_returns_node(cli):
    cmd, env, db = cli
    node = jrun(cmd, env, "add", "json please", "--db", db)
    assert NODE_KEYS <= set(node)
    assert node["source"] == "json please"


def test_add_dash_reads_stdin(cli):
    cmd, env, db = cli
    text = "# Title from stdin\n\nFirst paragraph, with ünïcödé — and “quotes”.\n\nSecond paragraph.\n"
    nid = add(cmd, env, "-", "--db", db, input=text)
    node = jrun(cmd, env, "show", nid, "--db", db)
    assert node["source"] == text
    assert node["title"] == "Title from stdin"


def test_add_stdin_invalid_utf8_saves_nothing(cli):
    cmd, env, db = cli
    _init_db(db)
    r = fails(cmd, env, "add", "-", "--db", db, input=b"caf\xe9 au lait\n")
    assert "UTF-8" in r.stderr
    assert "nothing was saved" in r.stderr
    assert jrun(cmd, env, "list", "--db", db) == []


def test_add_stdin_with_nul_bytes_refused(cli):
    cmd, env, db = cli
    _init_db(db)
    r = fails(cmd, env, "add", "-", "--db", db, input=b"looks like text\x00\x01\x02 but is binary")
    assert "NUL" in r.stderr
    assert jrun(cmd, env, "list", "--db", db) == []


def test_failed_add_creates_no_database(cli):
    cmd, env, db = cli
    fails(cmd, env, "add", "-", "--db", db, input=b"\xff\xfe")
    assert not db.exists()


@pytest.mark.parametrize("args", [[], ["   "], ["-"]])
def test_add_without_text_or_title_is_a_clear_error(cli, args):
    cmd, env, db = cli
    _init_db(db)
    r = fails(cmd, env, "add", *args, "--db", db, input=b"  \n\n" if args == ["-"] else None)
    assert "Nothing to add" in r.stderr
    assert jrun(cmd, env, "list", "--db", db) == []


def test_add_with_title_only(cli):
    cmd, env, db = cli
    nid = add(cmd, env, "--title", "Just a title", "--db", db)
    node = jrun(cmd, env, "show", nid, "--db", db)
    assert node["title"] == "Just a title" and node["source"] == ""


def usage_error(cmd, env, *args, input=None):
    """A malformed argument: exit status 2 with argparse's usage line, as the README's table promises."""
    r = run(cmd, env, *args, input=input, check_rc=2)
    assert "usage: cairn" in r.stderr and "Traceback" not in r.stderr and "Traceback" not in r.stdout
    return r


# A malformed --event-date is a bad argument (exit 2, the README), in every verb that takes one (issue 26).
@pytest.mark.parametrize("bad", ["2024-13-01", "2023-02-29", "yesterday", "01/02/2024", "2024-1-1x", " "])
def test_bad_event_date_is_a_usage_error(cli, bad):
    cmd, env, db = cli
    _init_db(db)
    r = usage_error(cmd, env, "add", "dated note", "--event-date", bad, "--db", db)
    assert "YYYY-MM-DD" in r.stderr and repr(bad) in r.stderr
    assert jrun(cmd, env, "list", "--db", db) == []


def test_bad_event_date_on_edit_is_a_usage_error(cli):
    cmd, env, db = cli
    nid = add(cmd, env, "dated note", "--event-date", "2024-02-29", "--db", db)
    for bad in ("2024-02-30", "2026-13-45"):
        r = usage_error(cmd, env, "edit", nid, "--event-date", bad, "--db", db)
        assert "YYYY-MM-DD" in r.stderr and bad in r.stderr
    assert jrun(cmd, env, "show", nid, "--db", db)["event_date"] == "2024-02-29"
    ok(cmd, env, "edit", nid, "--event-date", "2024-08", "--db", db)  # a month is a date
    assert jrun(cmd, env, "show", nid, "--db", db)["event_date"] == "2024-08"
    ok(cmd, env, "edit", nid, "--event-date", "", "--db", db)  # empty clears it
    assert jrun(cmd, env, "show", nid, "--db", db)["event_date"] is None


def test_unknown_verb_lists_only_the_verbs_for_people(cli):
    """`__complete` is the completion scripts' callback, not a verb to suggest (issue 26)."""
    cmd, env, db = cli
    r = usage_error(cmd, env, "nosuchverb")
    assert "invalid choice: 'nosuchverb'" in r.stderr and "'add'" in r.stderr and "'completion'" in r.stderr
    assert "__complete" not in r.stderr


# -- show ----------------------------------------------------------------------------------------
def test_show_json_shape(cli):
    cmd, env, db = cli
    a = add(cmd, env, "Body of the paper.", "--title", "A paper", "--description", "short summary",
            "--link", "https://example.org/p", "-d", "research", "-d", "AI", "-d", "research",
            "--event-date", "2024-02-29", "--type", "paper", "--db", db)
    b = add(cmd, env, "Other", "--db", db)
    edge = jrun(cmd, env, "link", a, b, "-e", "A cites Other", "--db", db)
    node = jrun(cmd, env, "show", a, "--db", db)
    assert set(node) == NODE_KEYS | {"edges"}
    assert node["id"] == a
    assert node["title"] == "A paper"
    assert node["description"] == "short summary"
    assert node["source"] == "Body of the paper."
    assert node["link"] == "https://example.org/p"
    assert node["event_date"] == "2024-02-29"
    assert node["type"] == "paper"
    assert node["dimensions"] == ["research", "AI"]
    assert node["chunk_status"] == "pending"
    assert ISO_UTC.match(node["created_at"]) and ISO_UTC.match(node["updated_at"])
    assert len(node["edges"]) == 1
    e = node["edges"][0]
    assert e["id"] == edge["id"]
    assert (e["from_node_id"], e["to_node_id"], e["explanation"]) == (a, b, "A cites Other")
    assert e["to_title"] == "Other" and e["from_title"] == "A paper"
    # The other end sees the same edge.
    assert [x["id"] for x in jrun(cmd, env, "show", b, "--db", db)["edges"]] == [edge["id"]]


def test_show_says_where_text_from_outside_came_from(cli, tmp_path):
    cmd, env, db = cli
    mine = add(cmd, env, "typed by me", "--db", db)
    doc = tmp_path / "clipping.txt"
    doc.write_text("Someone else's words.\n")
    theirs = add(cmd, env, str(doc), "--db", db)
    assert "text from:" not in run(cmd, env, "show", mine, "--db", db).stdout
    assert "text from: a captured document (PDF, text or HTML file)" in run(cmd, env, "show", theirs, "--db", db).stdout


def test_show_missing_node(cli):
    cmd, env, db = cli
    add(cmd, env, "exists", "--db", db)
    r = fails(cmd, env, "show", 999, "--db", db)
    assert r.stderr.strip() == "cairn: There is no node 999."
    assert r.stdout == ""


def test_debug_shows_traceback(cli):
    cmd, env, db = cli
    add(cmd, env, "exists", "--db", db)
    r = run(cmd, env, "show", 999, "--db", db, "--debug")
    assert r.returncode != 0
    assert "Traceback" in r.stderr and "There is no node 999" in r.stderr


def test_read_verb_without_database(cli):
    cmd, env, db = cli
    r = fails(cmd, env, "list", "--db", db)
    assert "No database" in r.stderr
    assert not db.exists()


# -- edit ----------------------------------------------------------------------------------------
def test_index_summary_and_edit_requeues(cli):
    cmd, env, db = cli
    nid = add(cmd, env, "# Lighthouses\n\nA lighthouse keeper trims the wick at dusk.", "--db", db)
    r = ok(cmd, env, "index", "--db", db)
    assert re.search(r"Indexed 1 node \(1 chunk; \d+ texts? embedded\)", r.stdout), r.stdout
    assert jrun(cmd, env, "show", nid, "--db", db)["chunk_status"] == "indexed"
    assert "Nothing to index" in ok(cmd, env, "index", "--db", db).stdout

    r = ok(cmd, env, "edit", nid, "--title", "Keepers of the light", "--db", db)
    assert "queued for indexing" in r.stdout
    node = jrun(cmd, env, "show", nid, "--db", db)
    assert node["title"] == "Keepers of the light"
    assert node["chunk_status"] == "pending"
    assert node["source"].startswith("# Lighthouses")
    assert node["updated_at"] >= node["created_at"]

    report = jrun(cmd, env, "index", "--db", db)
    assert report["indexed"] == 1 and report["errors"] == 0
    assert jrun(cmd, env, "show", nid, "--db", db)["chunk_status"] == "indexed"

    # The description feeds only the node vector: the chunk's vector is reused, not re-embedded.
    assert jrun(cmd, env, "edit", nid, "--description", "about keepers", "--db", db)["chunk_status"] == "pending"
    report = jrun(cmd, env, "index", "--db", db)
    assert (report["indexed"], report["reused"], report["embedded"]) == (1, 1, 1)

    # A change that does not touch indexed text keeps the node indexed.
    node = jrun(cmd, env, "edit", nid, "--link", "https://example.org/light", "--db", db)
    assert node["chunk_status"] == "indexed"


def test_edit_text_from_stdin_and_dimensions(cli):
    cmd, env, db = cli
    nid = add(cmd, env, "old text", "-d", "a", "-d", "b", "--db", db)
    node = jrun(cmd, env, "edit", nid, "--text", "-", "--add-dimension", "c", "--remove-dimension", "A",
                "--db", db, input="new text\n")
    assert node["source"] == "new text\n"
    assert node["dimensions"] == ["b", "c"]
    fails(cmd, env, "edit", 999, "--title", "x", "--db", db)


# -- rm / restore / trash ------------------------------------------------------------------------
def test_rm_needs_yes_without_tty_then_trash_and_restore(cli):
    cmd, env, db = cli
    a = add(cmd, env, "keep me around", "--db", db)
    b = add(cmd, env, "neighbour", "--db", db)
    edge = jrun(cmd, env, "link", a, b, "-e", "related", "--db", db)

    r = fails(cmd, env, "rm", a, "--db", db)
    assert "--yes" in r.stderr
    assert jrun(cmd, env, "show", a, "--db", db)["id"] == a

    r = ok(cmd, env, "rm", a, "--yes", "--db", db)
    assert "trash" in r.stdout
    assert fails(cmd, env, "show", a, "--db", db).stderr.strip() == f"cairn: There is no node {a}."
    assert jrun(cmd, env, "show", b, "--db", db)["edges"] == []
    trash = jrun(cmd, env, "trash", "--db", db)
    assert [(t["node_id"], t["title"], t["edges"]) for t in trash] == [(a, "keep me around", 1)]

    restored = jrun(cmd, env, "restore", a, "--db", db)
    assert restored["id"] == a and restored["source"] == "keep me around"
    assert restored["chunk_status"] == "pending"
    node = jrun(cmd, env, "show", a, "--db", db)
    assert [e["id"] for e in node["edges"]] == [edge["id"]]
    assert jrun(cmd, env, "trash", "--db", db) == []
    assert "not in the trash" in fails(cmd, env, "restore", a, "--db", db).stderr


# -- link / unlink -------------------------------------------------------------------------------
def test_link_and_unlink(cli):
    cmd, env, db = cli
    a = add(cmd, env, "Ada Lovelace", "--db", db)
    b = add(cmd, env, "Analytical Engine", "--db", db)
    out = ok(cmd, env, "link", a, b, "--explanation", "Ada wrote notes on the Engine", "--db", db).stdout
    assert re.fullmatch(r"\d+\n", out)
    edge_id = int(out)
    edges = jrun(cmd, env, "show", a, "--db", db)["edges"]
    assert [(e["id"], e["to_node_id"], e["explanation"]) for e in edges] == \
        [(edge_id, b, "Ada wrote notes on the Engine")]

    assert "already linked" in fails(cmd, env, "link", a, b, "-e", "again", "--db", db).stderr
    assert "different nodes" in fails(cmd, env, "link", a, a, "-e", "self", "--db", db).stderr
    assert "no node 999" in fails(cmd, env, "link", a, 999, "-e", "x", "--db", db).stderr
    assert "--yes" in fails(cmd, env, "unlink", edge_id, "--db", db).stderr
    assert len(jrun(cmd, env, "show", a, "--db", db)["edges"]) == 1

    ok(cmd, env, "unlink", edge_id, "--yes", "--db", db)
    assert jrun(cmd, env, "show", a, "--db", db)["edges"] == []
    assert jrun(cmd, env, "show", b, "--db", db)["edges"] == []
    assert "no edge" in fails(cmd, env, "unlink", edge_id, "--yes", "--db", db).stderr


# -- hubs / list ---------------------------------------------------------------------------------
def test_hubs_ordered_by_edge_count(cli):
    cmd, env, db = cli
    ids = [add(cmd, env, f"node {i}", "--db", db) for i in range(5)]
    memory = add(cmd, env, "a memory", "--type", "memory", "--db", db)
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (3, 1)]
    for x, y in pairs:
        ok(cmd, env, "link", ids[x], ids[y], "-e", f"{x} to {y}", "--db", db)
    for x in range(4):
        ok(cmd, env, "link", memory, ids[x], "-e", "remembered", "--db", db)
    hubs = jrun(cmd, env, "hubs", "--db", db)
    counts = [h["edge_count"] for h in hubs]
    assert counts == sorted(counts, reverse=True)
    by_id = {h["id"]: h["edge_count"] for h in hubs}
    # Both directions count; the memory node never counts as a hub (its edges still do).
    assert by_id == {ids[0]: 4, ids[1]: 4, ids[2]: 3, ids[3]: 3}
    assert memory not in by_id and ids[4] not in by_id
    for h in hubs:
        assert NODE_KEYS <= set(h)
    assert len(jrun(cmd, env, "hubs", "-n", "2", "--db", db)) == 2


def test_list_dimension_filter(cli):
    cmd, env, db = cli
    r1 = add(cmd, env, "research one", "-d", "research", "--db", db)
    add(cmd, env, "cooking", "-d", "food", "--db", db)
    r2 = add(cmd, env, "research two", "-d", "Research", "-d", "ai", "--db", db)
    add(cmd, env, "untagged", "--db", db)
    listed = jrun(cmd, env, "list", "--dimension", "research", "--db", db)
    assert [n["id"] for n in listed] == [r2, r1]  # most recently updated first
    assert {n["id"] for n in jrun(cmd, env, "list", "-d", "RESEARCH", "--db", db)} == {r1, r2}
    assert [n["id"] for n in jrun(cmd, env, "list", "-d", "ai", "--db", db)] == [r2]
    assert jrun(cmd, env, "list", "-d", "nope", "--db", db) == []
    assert len(jrun(cmd, env, "list", "--db", db)) == 4
    assert len(jrun(cmd, env, "list", "-n", "1", "--db", db)) == 1


# -- paths ---------------------------------------------------------------------------------------
def test_db_flag_puts_database_exactly_there(cairn_cmd, cli_env, tmp_path):
    target = tmp_path / "elsewhere" / "deep" / "my.db"
    nid = add(cairn_cmd, cli_env, "placed", "--db", target)
    assert target.is_file()
    assert not Path(cli_env["CAIRN_HOME"]).exists() or not any(Path(cli_env["CAIRN_HOME"]).iterdir())
    assert jrun(cairn_cmd, cli_env, "show", nid, "--db", target)["source"] == "placed"
    # Without --db, the CAIRN_HOME database is a different, still missing one.
    assert "No database" in fails(cairn_cmd, cli_env, "list").stderr


def test_cairn_home_holds_the_database(cairn_cmd, cli_env):
    home = Path(cli_env["CAIRN_HOME"])
    nid = add(cairn_cmd, cli_env, "at home")
    assert (home / "cairn.db").is_file()
    assert jrun(cairn_cmd, cli_env, "show", nid)["source"] == "at home"
    assert not Path(cli_env["HOME"]).exists() or not any(Path(cli_env["HOME"]).iterdir())


def test_version(cairn_cmd, cli_env):
    r = ok(cairn_cmd, cli_env, "--version")
    assert r.stdout.strip() == f"cairn {version('cairn')}"


# -- doctor --------------------------------------------------------------------------------------
def test_doctor_clean_on_empty_and_indexed_db(cli):
    cmd, env, db = cli
    r = ok(cmd, env, "doctor", "--db", db)
    assert "problem" not in r.stdout
    report = jrun(cmd, env, "doctor", "--db", db)
    assert report["clean"] is True
    add(cmd, env, "waiting to be indexed", "--db", db)
    r = run(cmd, env, "doctor", "--json", "--db", db, check_rc=1)
    pending = {f["check"]: f["count"] for f in json.loads(r.stdout)["findings"]}["pending"]
    assert pending == 1
    ok(cmd, env, "index", "--db", db)
    report = jrun(cmd, env, "doctor", "--db", db)
    assert report["clean"] is True
    assert all(f["count"] == 0 for f in report["findings"])


# -- search --------------------------------------------------------------------------------------
CORPUS = [
    ("Sourdough baking", "# Starter\n\nFeed the sourdough starter with flour and water every day.\n\n"
     "# Baking\n\nBake the loaf in a hot dutch oven for a crisp crust."),
    ("Volcanoes", "Basalt lava flows from shield volcanoes such as those in Hawaii.\n\n"
     "Magma chambers feed eruptions."),
    ("C++ templates", "Template metaprogramming in c++ lets the compiler compute at compile time."),
    ("Markup test", "Literal [bold]x[/] and [link=http://e]y[/link] must print as typed."),
    ("Escape test", "red \x1b[31mALERT\x1b[0m text and a bidi \u202e override"),
    ("Chess openings", "The Sicilian defence answers e4 with c5; a sharp chess opening."),
]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """One indexed database shared by the read-only search tests (indexing loads the model once)."""
    tmp = tmp_path_factory.mktemp("cli_search")
    env = dict(os.environ)
    env["CAIRN_HOME"] = str(tmp / "cairnhome")
    env["HOME"] = str(tmp / "home")
    script = Path(sys.executable).parent / "cairn"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]
    db = tmp / "search.db"
    ids = {}
    for title, text in CORPUS:
        ids[title] = add(cmd, env, "-", "--title", title, "--db", db, input=text)
    ok(cmd, env, "index", "--db", db)
    return cmd, env, db, ids


@pytest.mark.parametrize("mode,query,expected", [
    ("fts", "sourdough starter", "Sourdough baking"),
    ("vector", "molten rock erupting from a mountain", "Volcanoes"),
    ("hybrid", "dutch oven crust", "Sourdough baking"),
])
def test_search_modes_return_hits_with_score_and_chunk(indexed, mode, query, expected):
    cmd, env, db, ids = indexed
    hits = jrun(cmd, env, "search", query, "--mode", mode, "--db", db)
    assert isinstance(hits, list) and hits
    assert hits[0]["id"] == ids[expected]
    scores = [h["score"] for h in hits]
    assert all(isinstance(s, (int, float)) for s in scores)
    assert scores == sorted(scores, reverse=True)
    sources = dict(CORPUS)
    for h in hits:
        assert NODE_KEYS | {"score", "chunk"} <= set(h)
        assert h["chunk_status"] == "indexed"
        chunk = h["chunk"]
        assert chunk is not None and set(chunk) == CHUNK_KEYS
        assert sources[h["title"]][chunk["start_char"]:chunk["end_char"]] == chunk["text"]
    if expected == "Sourdough baking" and mode != "vector":
        # The best chunk is the section that matched, with its heading path.
        assert hits[0]["chunk"]["heading_path"] in (["Starter"], ["Baking"])


def test_search_limit_and_dimensionless_plain_output(indexed):
    cmd, env, db, ids = indexed
    assert len(jrun(cmd, env, "search", "the", "--mode", "fts", "-n", "1", "--db", db)) <= 1
    r = ok(cmd, env, "search", "sourdough", "--mode", "fts", "--db", db)
    assert f"[{ids['Sourdough baking']}] Sourdough baking" in r.stdout
    assert "No matches." in ok(cmd, env, "search", "zzzqqq", "--mode", "fts", "--db", db).stdout


MALFORMED = ['"unclosed', "c++", "*", "", "-x", "a:b", "NEAR(", "AND OR NOT", "title:*", '""', "(((", "🙂*"]


@pytest.mark.parametrize("query", MALFORMED)
def test_malformed_fts_search_never_fails(indexed, query):
    cmd, env, db, _ = indexed
    # `--` so a query starting with "-" reaches cairn instead of argparse (see test_dash_query_*).
    hits = json.loads(ok(cmd, env, "search", "--mode", "fts", "--json", "--db", db, "--", query).stdout)
    assert isinstance(hits, list)


def test_dash_query_without_double_dash_is_a_usage_error_not_a_crash(indexed):
    cmd, env, db, _ = indexed
    r = run(cmd, env, "search", "-x", "--db", db)
    assert r.returncode == 2 and "usage:" in r.stderr and "Traceback" not in r.stderr
    # With a space, argparse takes it as the query: exclusion only → no hits, exit 0.
    assert jrun(cmd, env, "search", "-x -y", "--mode", "fts", "--db", db) == []


def test_malformed_search_in_every_mode_one_process(indexed):
    """The same inputs through the real CLI entry point in vector and hybrid mode (one process, one model load)."""
    cmd, env, db, ids = indexed
    script = (
        "import json, sys\n"
        "from tui.cli.main import main\n"
        "queries = json.loads(sys.argv[1])\n"
        "rcs = [main(['search', '--mode', m, '--json', '--db', sys.argv[2], '--', q])"
        " for m in ('vector', 'hybrid') for q in queries]\n"
        "sys.stderr.write('RCS=' + json.dumps(rcs) + '\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(MALFORMED), str(db)],
                          env=_clean_env(env), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    rcs = json.loads(proc.stderr.strip().splitlines()[-1].removeprefix("RCS="))
    assert rcs == [0] * (2 * len(MALFORMED)), proc.stderr
    assert "Traceback" not in proc.stderr


def test_cpp_query_finds_cpp_note(indexed):
    cmd, env, db, ids = indexed
    hits = jrun(cmd, env, "search", "c++", "--mode", "fts", "--db", db)
    assert hits and hits[0]["id"] == ids["C++ templates"]


# -- untrusted text in the terminal --------------------------------------------------------------
def test_rich_markup_printed_literally(indexed):
    cmd, env, db, ids = indexed
    nid = ids["Markup test"]
    shown = ok(cmd, env, "show", nid, "--db", db).stdout
    assert "[bold]x[/]" in shown
    assert "[link=http://e]y[/link]" in shown
    found = ok(cmd, env, "search", "literal typed", "--mode", "fts", "--db", db).stdout
    assert f"[{nid}] Markup test" in found
    assert "[bold]x[/]" in found
    assert "[link=http://e]y[/link]" in found


def test_ansi_escape_in_note_not_emitted_raw(indexed):
    cmd, env, db, ids = indexed
    nid = ids["Escape test"]
    r = ok(cmd, env, "show", nid, "--db", db)
    assert b"\x1b" not in r.raw_stdout
    assert "\u202e" not in r.stdout
    assert "ALERT" in r.stdout
    r = ok(cmd, env, "search", "bidi override", "--mode", "fts", "--db", db)
    assert f"[{nid}]" in r.stdout
    assert b"\x1b" not in r.raw_stdout
    # --json keeps the text exactly (escaped by JSON, never raw).
    r = ok(cmd, env, "show", nid, "--json", "--db", db)
    assert b"\x1b" not in r.raw_stdout
    assert json.loads(r.stdout)["source"] == dict(CORPUS)["Escape test"]


def test_ansi_escape_in_title_from_argv(cli):
    cmd, env, db = cli
    nid = add(cmd, env, "\x1b]0;pwned\x07\x1b[2J plain", "--db", db)
    r = ok(cmd, env, "show", nid, "--db", db)
    assert b"\x1b" not in r.raw_stdout and b"\x07" not in r.raw_stdout
    r = ok(cmd, env, "list", "--db", db)
    assert b"\x1b" not in r.raw_stdout and b"\x07" not in r.raw_stdout
