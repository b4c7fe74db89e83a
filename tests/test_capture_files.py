"""Files as nodes (issue 15 parts 3 and 4): PDFs page by page with the page on each chunk and in the
citation, .txt and .md, every refusal in one sentence, `cairn add FILE`, `cairn import FOLDER` with PDFs,
text and markdown, the progress line, and an import killed mid-way that resumes without duplicates."""

from __future__ import annotations

import re
import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from chat_support import searcher  # noqa: F401  (fixture)
from core.agent import profiles
from core.capture.files import CaptureError, capture_file, capture_folder, read_file
from core.chat.context import ContextEngine
from core.graph.store import Store
from pdf_maker import IMAGE, corrupt_pdf, encrypted_pdf, make_pdf, outlined_pdf, truncated_pdf

PAGES = [
    "Soil notes\nCompost heaps need air, water and a mix of green and brown material.",
    "Mycorrhizal fungi trade phosphorus with plant roots in exchange for sugars.\n"
    "The fungal network reaches far beyond the roots themselves.",
    "Tomatoes want full sun, deep watering and a stake before the fruit sets.",
]


def _env(cli_env: dict) -> dict:
    env = dict(cli_env)
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CAIRN_DEBUG", "COLUMNS"):
        env.pop(var, None)
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    return env


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# -- PDFs: pages, titles, citations ---------------------------------------------------------------
def test_a_three_page_pdf_keeps_each_chunks_page_and_the_passage_says_p_2(tmp_path, store, indexer, searcher):
    pdf = _write(tmp_path / "garden.pdf", make_pdf(PAGES, title="The garden handbook"))
    outcome = capture_file(store, pdf)
    node = outcome.node
    assert outcome.status == "created" and node["title"] == "The garden handbook"
    capture = node["metadata"]["capture"]
    assert capture["pages"] == 3 and capture["extractor"].startswith("pypdfium2 ")
    assert capture["path"] == str(pdf.resolve()) and len(capture["sha256"]) == 64
    for n, start in enumerate(capture["page_starts"]):  # the offsets point at each page's text
        assert node["source"][start:].startswith(PAGES[n].splitlines()[0])
    indexer.run()
    rows = store.db.execute("SELECT page, text FROM chunks WHERE node_id = ? ORDER BY chunk_idx",
                            (node["id"],)).fetchall()
    assert sorted({r["page"] for r in rows}) == [1, 2, 3]
    for r in rows:  # no chunk crosses a page break, and each is on the page it says
        assert r["text"] in PAGES[r["page"] - 1].replace("\n", "\n")

    engine = ContextEngine(store, searcher, profiles.get("orchestrator"))
    suffix = engine.suffix("How do mycorrhizal fungi trade phosphorus with roots?")
    mine = [p for p in suffix.passages if p.node_id == node["id"]]
    assert mine and mine[0].page == 2, suffix.retrieved
    # a captured document is quoted material: fenced, its header with it (core/chat/fence.py)
    assert re.search(r'<untrusted id="[0-9a-f]{12}" source="a captured document \(PDF, text or HTML file\)">\n'
                     + re.escape(f'[{mine[0].n}] [NODE:{node["id"]}:"The garden handbook"] (p. 2)\nMycorrhizal'),
                     suffix.retrieved), suffix.retrieved


def test_the_title_comes_from_the_first_line_without_a_title_in_the_metadata(tmp_path):
    captured = read_file(_write(tmp_path / "notitle.pdf", make_pdf(PAGES)))
    assert captured.title == "Soil notes"
    blank = read_file(_write(tmp_path / "blank.pdf", make_pdf(PAGES, title="  ", author="Ada")))
    assert blank.title == "Soil notes"  # a blank /Title is no title


def test_a_scanned_pdf_is_refused_and_a_scanned_page_is_reported(tmp_path, store):
    scan = _write(tmp_path / "scan.pdf", make_pdf([IMAGE, IMAGE]))
    with pytest.raises(CaptureError) as err:
        capture_file(store, scan)
    assert str(err.value).startswith("scan.pdf has no text layer (2 pages, none with text): it may be a scan; "
                                     "nothing was imported")
    assert store.counts()["nodes"] == 0
    mixed = read_file(_write(tmp_path / "mixed.pdf", make_pdf([PAGES[0], IMAGE, PAGES[2]])))
    assert mixed.pages == 3
    assert mixed.warnings == ["page 2 has no text (a scanned page or only images); left out"]
    assert mixed.source[mixed.page_starts[2]:].startswith("Tomatoes")


def test_a_password_protected_pdf_is_refused_and_an_owner_only_one_is_read(tmp_path):
    with pytest.raises(CaptureError, match=r"^locked\.pdf is password-protected; Cairn cannot read it without "
                                           r"the password, so nothing was imported"):
        read_file(_write(tmp_path / "locked.pdf", encrypted_pdf(["secret plans"])))
    opened = read_file(_write(tmp_path / "owner.pdf", encrypted_pdf(["Open text for everyone"], user_password="")))
    assert opened.source == "Open text for everyone"


@pytest.mark.parametrize("data", [corrupt_pdf(), truncated_pdf(PAGES), b"not a pdf at all"],
                         ids=["corrupt", "truncated", "not-pdf"])
def test_a_damaged_pdf_is_refused_in_one_sentence(tmp_path, data, capsys):
    with pytest.raises(CaptureError) as err:
        read_file(_write(tmp_path / "bad.pdf", data))
    message = str(err.value)
    assert message.startswith("bad.pdf could not be read as a PDF (") and message.endswith("nothing was imported.")
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""  # pypdf's complaints are not printed around the sentence


# -- text and markdown ----------------------------------------------------------------------------
def test_invalid_utf8_is_replaced_and_reported(tmp_path, store):
    path = _write(tmp_path / "latin.txt", "Café notes\nline two ".encode("latin-1") + b"\xff\xfe end")
    outcome = capture_file(store, path)
    assert outcome.node["title"] == "Caf� notes"
    assert "line two" in outcome.node["source"] and "\ufffd" in outcome.node["source"]
    assert outcome.captured.warnings == ["3 byte sequences that were not valid UTF-8 (the first at byte 3) "
                                         "replaced with �"]


def test_binary_unknown_empty_and_oversized_files_are_refused(tmp_path, monkeypatch):
    with pytest.raises(CaptureError, match=r"^blob\.txt looks like a binary file, not text \(it holds NUL bytes\); "
                                           r"nothing was imported\.$"):
        read_file(_write(tmp_path / "blob.txt", b"abc\x00\x01\x02" * 10))
    with pytest.raises(CaptureError, match=r"^photo\.jpg is a \.jpg file \(image/jpeg\); Cairn captures PDF"):
        read_file(_write(tmp_path / "photo.jpg", b"\xff\xd8\xff"))
    with pytest.raises(CaptureError, match=r"^empty\.txt is empty; nothing was imported\.$"):
        read_file(_write(tmp_path / "empty.txt", b"  \n"))
    with pytest.raises(CaptureError, match=r"^There is no file at "):
        read_file(tmp_path / "missing.pdf")
    import core.capture.files as files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1_000)
    with pytest.raises(CaptureError, match=r"^big\.txt is 0\.0 MB; files over 0 MB are not captured"):
        read_file(_write(tmp_path / "big.txt", b"x" * 2_000))


def test_markdown_title_from_frontmatter_then_first_heading(tmp_path):
    fm = read_file(_write(tmp_path / "a.md", b"---\ntitle: From the frontmatter\ndate: 2024-05-01\n---\n# Heading\nBody"))
    assert fm.title == "From the frontmatter" and fm.source == "# Heading\nBody"
    assert fm.frontmatter == {"title": "From the frontmatter", "date": "2024-05-01"}
    heading = read_file(_write(tmp_path / "b.md", b"Some intro line\n\n## The real heading\ntext"))
    assert heading.title == "The real heading"
    broken = read_file(_write(tmp_path / "c.md", b"---\ntitle: [unclosed\n---\nText"))
    assert broken.warnings[0].startswith("the frontmatter is not valid YAML (")


def test_a_changed_file_updates_its_node_and_an_unchanged_one_is_skipped(tmp_path, store):
    path = _write(tmp_path / "n.txt", b"First version\nbody")
    first = capture_file(store, path)
    again = capture_file(store, path)
    assert again.status == "unchanged" and again.node["id"] == first.node["id"]
    path.write_bytes(b"Second version\nbody")
    changed = capture_file(store, path)
    assert changed.status == "updated" and changed.node["id"] == first.node["id"]
    assert changed.node["title"] == "Second version" and changed.node["chunk_status"] == "pending"
    store.update_node(first.node["id"], title="My own title")
    path.write_bytes(b"Third version\nbody")
    assert capture_file(store, path).node["title"] == "My own title"  # the user's title is kept
    assert store.counts()["nodes"] == 1


def test_the_chunks_table_has_a_nullable_page_column(store):
    columns = {r["name"]: r for r in store.db.execute("PRAGMA table_info(chunks)")}
    assert columns["page"]["type"] == "INTEGER" and columns["page"]["notnull"] == 0


def test_a_note_without_pages_has_no_page_and_bad_page_starts_are_refused(embedder):
    from core.index.chunker import Chunker

    chunker = Chunker.for_embedder(embedder)
    assert {c.page for c in chunker.split("Plain note.\n\nSecond paragraph.")} == {None}
    paged = chunker.split("one\n\ntwo\n\nthree", [0, 5, 10])
    assert [(c.text, c.page) for c in paged] == [("one", 1), ("two", 2), ("three", 3)]
    with pytest.raises(ValueError, match="page starts must ascend from 0"):
        chunker.split("abc", [1, 2])


def test_the_sources_list_names_the_page(store):
    from tui.widgets.chat_pane import _sources

    node = store.add_node("The garden handbook", "text")
    labels = _sources(store, {"passages": {"1": node["id"], "2": node["id"]}, "pages": {"1": 4}}, [])
    assert [label for label, _ in labels] == ["[1] The garden handbook, p. 4", "[2] The garden handbook"]


# -- progress -------------------------------------------------------------------------------------
def test_the_progress_line_shows_count_rate_and_eta():
    from tui.cli.capture_files import RateLine

    now = [1000.0]
    line = RateLine(clock=lambda: now[0])
    assert line.text(0, 200) == "0/200 files · – files/s"
    now[0] += 10
    assert line.text(20, 200) == "20/200 files · 2.0 files/s · ETA 1 min 30 s"
    now[0] += 90
    assert line.text(200, 200) == "200/200 files · 2.0 files/s · done"
    slow = RateLine(clock=lambda: now[0])
    now[0] += 60
    assert slow.text(1, 100) == "1/100 files · 1.0 files/min · ETA 1 h 39 min"


def test_capture_folder_reports_each_file_and_progress(tmp_path, store):
    _write(tmp_path / "f" / "a.pdf", make_pdf(PAGES, title="A"))
    _write(tmp_path / "f" / "sub" / "b.txt", b"Bee notes\nhive")
    _write(tmp_path / "f" / "scan.pdf", make_pdf([IMAGE]))
    _write(tmp_path / "f" / "note.md", b"# Markdown is the vault import's")
    _write(tmp_path / "f" / ".hidden" / "x.pdf", make_pdf(["hidden"]))
    seen, ticks = [], []
    report = capture_folder(store, tmp_path / "f", lambda d, t: ticks.append((d, t)),
                            on_file=lambda rel, status, detail: seen.append((rel, status)))
    assert seen == [("a.pdf", "created"), ("scan.pdf", "skipped"), ("sub/b.txt", "created")]
    assert ticks == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert (report.files, report.created, report.pages, len(report.skipped)) == (3, 2, 3, 1)
    assert report.skipped[0][1].startswith("scan.pdf has no text layer")


# -- the command line -----------------------------------------------------------------------------
def test_cairn_add_file_end_to_end(cairn_cmd, cli_env, tmp_path):
    env = _env(cli_env)
    db = tmp_path / "cli.db"
    pdf = _write(tmp_path / "garden.pdf", make_pdf(PAGES, title="The garden handbook"))
    done = subprocess.run([*cairn_cmd, "add", str(pdf), "--db", str(db), "-d", "garden"], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    node_id = int(done.stdout)
    assert f"Captured garden.pdf as node {node_id} (3 pages, " in done.stderr
    again = subprocess.run([*cairn_cmd, "add", str(pdf), "--db", str(db)], env=env, capture_output=True,
                           text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert again.returncode == 0 and int(again.stdout) == node_id
    assert "garden.pdf is unchanged since it was captured as node" in again.stderr
    scan = _write(tmp_path / "scan.pdf", make_pdf([IMAGE]))
    refused = subprocess.run([*cairn_cmd, "add", str(scan), "--db", str(db)], env=env, capture_output=True,
                             text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith("cairn: scan.pdf has no text layer (1 page, none with text): it may be a scan")
    with Store(db) as store:
        node = store.get_node(node_id)
        assert node["dimensions"] == ["garden"] and node["link"] == pdf.resolve().as_uri()
        assert store.counts()["nodes"] == 1
    # text that does not name a file is still a note, however long (no "File name too long")
    for text in ("just a note", "x" * 5_000, "a line\n" * 200, "~/" + "y" * 300):
        note = subprocess.run([*cairn_cmd, "add", text, "--db", str(db)], env=env, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert note.returncode == 0 and note.stdout.strip().isdigit(), note.stderr


def test_cairn_import_folder_with_pdfs_text_and_markdown(cairn_cmd, cli_env, tmp_path):
    env = _env(cli_env)
    db = tmp_path / "cli.db"
    folder = tmp_path / "library"
    _write(folder / "garden.pdf", make_pdf(PAGES, title="The garden handbook"))
    _write(folder / "papers" / "bees.txt", b"Bee notes\nA hive keeps its temperature near 35 degrees.")
    _write(folder / "index.md", b"# Library\nSee [[Bees]].")
    _write(folder / "scan.pdf", make_pdf([IMAGE]))
    done = subprocess.run([*cairn_cmd, "import", str(folder), "--db", str(db), "--json"], env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["created"] == 1  # the markdown note, through the vault import
    files = report["files"]
    assert (files["files"], files["created"], files["pages"]) == (3, 2, 3)
    assert files["skipped"][0][0] == "scan.pdf" and "no text layer" in files["skipped"][0][1]
    assert report["index"]["indexed"] == 3
    assert "garden.pdf: created, 3 pages · 1/3 files · " in done.stderr
    with Store(db) as store:
        pages = {r[0] for r in store.db.execute("SELECT page FROM chunks WHERE page IS NOT NULL")}
        assert pages == {1, 2, 3}
    text = subprocess.run([*cairn_cmd, "import", str(folder), "--db", str(db)], env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert text.returncode == 0, text.stderr
    assert "3 PDF, text or HTML files in " in text.stdout and ": 0 created, 0 updated, 2 unchanged, 1 skipped" in text.stdout
    assert "scan.pdf: scan.pdf has no text layer" in text.stdout
    one = subprocess.run([*cairn_cmd, "import", str(folder / "garden.pdf"), "--db", str(db)], env=env,
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert one.returncode == 1 and "to capture one file (.pdf, .txt, .md), use `cairn add FILE`." in one.stderr


def test_a_killed_import_resumes_without_duplicates_or_losses(cairn_cmd, cli_env, tmp_path):
    env = _env(cli_env)
    db = tmp_path / "cli.db"
    folder = tmp_path / "many"
    total = 40
    body = [f"Page {p} of the report on topic number {{n}}. " * 40 for p in range(1, 31)]
    for n in range(total):
        _write(folder / f"report-{n:03}.pdf", make_pdf([b.format(n=n) for b in body], title=f"Report {n}"))
    proc = subprocess.Popen([*cairn_cmd, "import", str(folder), "--db", str(db), "--no-index"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    reported, lines = 0, []
    try:
        for line in proc.stderr:
            lines.append(line)
            if ": created, 30 pages · " in line:
                reported += 1
                if reported == 3:
                    os.kill(proc.pid, signal.SIGKILL)
                    break
    finally:
        watchdog.cancel()
        proc.wait(timeout=30)
        proc.stderr.close()
    assert reported == 3, "".join(lines)
    with Store(db) as store:
        first = store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]
    assert 3 <= first < total, first  # killed part-way (each file takes far longer than reading a line)
    done = subprocess.run([*cairn_cmd, "import", str(folder), "--db", str(db), "--no-index", "--json"], env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)["files"]
    assert files["unchanged"] == first and files["created"] == total - first and not files["skipped"]
    with Store(db) as store:
        rows = store.db.execute("SELECT title, source, json_extract(metadata, '$.capture.path') AS path,"
                                " json_extract(metadata, '$.capture.pages') AS pages FROM nodes").fetchall()
    assert len(rows) == total and len({r["path"] for r in rows}) == total  # no duplicates, no losses
    for r in rows:  # every node whole: written in one transaction
        n = int(r["title"].split()[-1])
        assert r["pages"] == 30 and r["source"].count(f"topic number {n}.") == 30 * 40


def test_again_goes_with_url_only(cairn_cmd, cli_env, tmp_path):
    """`--again` re-captures a web address; with a file (captured again when it changes) or a plain
    note it is refused instead of being silently ignored."""
    import subprocess

    note = tmp_path / "note.txt"
    note.write_text("A note about basalt.\n", encoding="utf-8")
    for args, says in (([str(note), "--again"], "--again is for --url"), (["plain text", "--again"], "--again goes with --url")):
        run = subprocess.run([*cairn_cmd, "--db", str(tmp_path / "a.db"), "add", *args], env=cli_env,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert run.returncode != 0 and says in run.stderr, run.stderr


PHRASE_PAGES = [
    "A copper kettle whistles when the water inside it boils; the steam sings through its spout.",
    "Tax returns are due at the end of April. Keep receipts for seven years, file the schedules in order, "
    "and note every deduction with its date. Between the forms, a line from a letter: the old copper kettle "
    "whistles at dawn. Then back to the ledger: quarterly estimates, penalties and interest.",
    "Seeds of tomatoes germinate best in warm, moist compost under a clear lid.",
]


def test_a_quoted_phrase_brings_the_passage_that_holds_it_with_its_page(tmp_path, store, indexer, searcher):
    """Hybrid search shows, for each hit, the node's chunk that its own blend ranks best (keywords and
    meaning per chunk), not the vector side's nearest chunk: a phrase on one page of a PDF brings that
    page's passage, `cairn search` says "p. 2", and the chat cites the same page (issue 24)."""
    pdf = _write(tmp_path / "letters.pdf", make_pdf(PHRASE_PAGES, title="Letters and ledgers"))
    node = capture_file(store, pdf).node
    indexer.run()
    nearest = searcher.search("copper kettle whistles", mode="vector", limit=1)[0]
    assert nearest["id"] == node["id"] and nearest["chunk"]["page"] == 1  # the meaning alone: page 1
    hit = searcher.search('"old copper kettle whistles"', mode="hybrid", limit=5)[0]
    assert hit["id"] == node["id"]
    assert hit["chunk"]["page"] == 2 and "old copper kettle whistles" in hit["chunk"]["text"], hit["chunk"]
    engine = ContextEngine(store, searcher, profiles.get("orchestrator"))
    mine = [p for p in engine.suffix('"old copper kettle whistles"').passages if p.node_id == node["id"]]
    assert mine and mine[0].page == 2 and "old copper kettle whistles" in mine[0].text


def test_cairn_search_names_the_page_of_a_pdf_hit(tmp_path, cairn_cmd, cli_env):
    env = _env(cli_env)
    pdf = _write(tmp_path / "letters.pdf", make_pdf(PHRASE_PAGES, title="Letters and ledgers"))
    assert subprocess.run([*cairn_cmd, "add", str(pdf)], env=env, capture_output=True, text=True).returncode == 0
    assert subprocess.run([*cairn_cmd, "index"], env=env, capture_output=True, text=True).returncode == 0
    shown = subprocess.run([*cairn_cmd, "search", '"old copper kettle whistles"'], env=env, capture_output=True,
                           text=True)
    assert shown.returncode == 0 and "p. 2" in shown.stdout and "old copper kettle whistles" in shown.stdout, shown
    hits = json.loads(subprocess.run([*cairn_cmd, "search", '"old copper kettle whistles"', "--json"], env=env,
                                     capture_output=True, text=True).stdout)
    assert hits[0]["chunk"]["page"] == 2


def test_lines_starting_with_a_hash_are_no_headings_in_a_pdf_or_a_text_file(tmp_path, store, indexer):
    """A man page's `# ls -l` or a config file's `# comment` is not a heading: only markdown has them
    (issue 24: 2,324 of 2,947 chunks of the man-page PDFs carried such a false heading)."""
    shell = ["Listing files\n# ls -l /etc\nshows the long form.\n# Parameters\nNone are needed.",
             "Page two talks about permissions and owners of files."]
    pdf = capture_file(store, _write(tmp_path / "ls.pdf", make_pdf(shell, title="ls"))).node
    txt = capture_file(store, _write(tmp_path / "conf.txt", b"# a comment\nkey = value\n# another\nmore = 1\n")).node
    note = store.add_node("Markdown note", "# Real heading\nUnder it.\n")
    indexer.run()
    paths = {node_id: {tuple(json.loads(r[0])) for r in store.db.execute(
        "SELECT heading_path FROM chunks WHERE node_id = ?", (node_id,))} for node_id in (pdf["id"], txt["id"], note["id"])}
    assert paths[pdf["id"]] == {()} and paths[txt["id"]] == {()}
    assert paths[note["id"]] == {("Real heading",)}


def test_pdfs_chunked_with_false_headings_before_are_indexed_again(tmp_path, db_path):
    """Migration 9: a captured PDF whose chunks got a heading from a `#` line is indexed again."""
    from core.graph.migrations import MIGRATIONS
    from core.index.indexer import Indexer

    shell = ["Listing files\n# ls -l /etc\nshows the long form.", "Page two."]
    with Store(db_path) as store:
        node = capture_file(store, _write(tmp_path / "ls.pdf", make_pdf(shell, title="ls"))).node
        Indexer(store).run()
        # as an earlier version chunked it: a heading from the `#` line, and the schema before migration 9
        store.db.execute("UPDATE chunks SET heading_path = '[\"ls -l /etc\"]' WHERE node_id = ?", (node["id"],))
        store.db.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    with Store(db_path) as store:
        assert store.db.execute("SELECT chunk_status FROM nodes WHERE id = ?", (node["id"],)).fetchone()[0] == "pending"
        Indexer(store).run()
        assert {r[0] for r in store.db.execute("SELECT heading_path FROM chunks WHERE node_id = ?", (node["id"],))} == {"[]"}


MANUAL = b"""<!DOCTYPE html><html><head><meta charset="iso-8859-1"><title>Widget manual</title></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<main><h1>Widget manual</h1>
<h2>Installing the widget</h2>
<p>Unpack the widget into a dry place and fasten it with the four brass screws that come with it.
The caf\xe9 table in the picture is not included.</p>
<ul><li>Check the screws first.</li><li>Keep the spare washer.</li></ul>
<h2>Cleaning</h2>
<p>Wipe the widget with a damp cloth once a month; never put it in the dishwasher, whatever the label says.</p>
</main></body></html>"""


def test_a_folder_import_captures_html_files_and_lists_every_file_it_leaves_out(tmp_path, cairn_cmd, cli_env):
    """Folder import takes .html files as web pages are taken (their charset, their main text as markdown,
    their title), and says of every other file why it was not imported (issue 24 item 5)."""
    env = _env(cli_env)
    folder = tmp_path / "docs"
    _write(folder / "manual.html", MANUAL)
    _write(folder / "photo.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    _write(folder / "report.docx", b"PK\x03\x04" + b"\x00" * 32)
    _write(folder / "note.md", b"# A note\nIt stays the vault import's.\n")
    done = subprocess.run([*cairn_cmd, "import", str(folder), "--json"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    shown = subprocess.run([*cairn_cmd, "import", str(folder)], env=env, capture_output=True, text=True)
    assert "photo.png: a .png file (image/png): attachments are not notes" in shown.stdout, shown.stdout
    assert "report.docx: a .docx file" in shown.stdout and "not a type Cairn reads" in shown.stdout
    with Store(Path(env["CAIRN_HOME"]) / "cairn.db") as store:
        row = store.db.execute("SELECT id FROM nodes WHERE title = 'Widget manual'").fetchone()
        assert row is not None, [r[0] for r in store.db.execute("SELECT title FROM nodes")]
        node = store.get_node(row[0])
    assert node["metadata"]["capture"]["kind"] == "html"
    assert "## Installing the widget" in node["source"] and "café table" in node["source"]
    assert "- Check the screws first." in node["source"] and "Home" not in node["source"]


def test_a_pdfs_words_are_made_whole_ligatures_folded_and_line_end_hyphens_joined(tmp_path):
    """Issue 24 item 2: `ﬁle` (U+FB01) is "file", `com-` at a line end and `mand` on the next are
    "command" where the document says "command" elsewhere; a dash the document never joins stays."""
    from core.capture.pdf_words import whole_words

    pages = ["The com-\nmand line runs a com-\n  mand here.\nA well-\nknown tool.",
             "Every command and the well-known ones.\nA \ufb01le \ufb02ows. A dash at the end -\nnext",
             "No join: zig-\nzag today"]
    assert whole_words(pages) == [
        "The command\nline runs a command\nhere.\nA well-known\ntool.",
        "Every command and the well-known ones.\nA file flows. A dash at the end -\nnext",
        "No join: zig-\nzag today"]
    pdf = _write(tmp_path / "manual.pdf", make_pdf(
        ["Usage\nThe com-\nmand reads its input.", "Each command writes one line."], title="Manual"))
    captured = read_file(pdf)
    assert "The command reads its input." in captured.source  # PDFium joins the two lines at its mark
    for n, start in enumerate(captured.page_starts):  # the page starts still point at each page's text
        assert captured.source[start:].startswith(["Usage", "Each command"][n])


def test_spaces_the_reader_guessed_inside_a_word_are_taken_back_or_moved_and_the_pdfs_own_are_kept():
    """Issue 24 item 2: groff and Ghostscript space words by position; a space PDFium guesses at a kerning
    (`v alue`) goes where the document shows the word whole and the piece is seen nowhere else; a space
    in the wrong place (`ifpar ameter`) moves; two words the document has apart stay apart; a space the
    PDF holds itself is never touched, and PDFium's line-end mark (U+FFFE) joins or becomes a hyphen."""
    from core.capture.pdf_words import whole_words

    pages = ["Sets the v alue of a part.", "The value, if parameter, ifpar ameter and apart; part two.",
             "Keep a wor d here: no soft space; word.", "The com\ufffemand runs; zig\ufffezag; a \ufb01le b uiltin",
             "a builtin command"]

    def guessed(page: str, *at: str) -> list[int]:
        return [page.index(a) + a.index(" ") for a in at]

    soft = [guessed(pages[0], "v a", "a p"), guessed(pages[1], "r a"), [], guessed(pages[3], "b u"), []]
    assert whole_words(pages, soft) == [
        "Sets the value of a part.",  # "a" and "part" both occur on their own: two words
        "The value, if parameter, if parameter and apart; part two.",
        "Keep a wor d here: no soft space; word.",  # the PDF's own space
        "The command runs; zig-zag; a file builtin",
        "a builtin command"]
    for page, mended in zip(pages, whole_words(pages, soft)):  # a moved space keeps the length
        assert len(mended) <= len(page)


def test_pdfium_crashing_hanging_or_out_of_memory_is_one_sentence_and_the_caller_lives(tmp_path, monkeypatch):
    """The reader runs in a child process (core/capture/pdf_reader.py): what a hostile PDF does to it
    costs the child, and the user reads one sentence. The child is replaced by scripts that do what a
    crashing, looping or starving PDFium would."""
    import sys

    from core.capture import pdf_reader

    pdf = _write(tmp_path / "hostile.pdf", make_pdf(PAGES))

    def child(name: str, body: str) -> None:
        script = tmp_path / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
        monkeypatch.setattr(sys, "executable", str(script))

    child("crash", "kill -SEGV $$")
    with pytest.raises(CaptureError, match=r"^hostile\.pdf made the PDF reader stop \(SIGSEGV\); the file may be "
                                           r"damaged or made to attack PDF readers, so nothing was imported\.$"):
        read_file(pdf)
    child("starve", "echo 'MemoryError' >&2; exit 1")
    with pytest.raises(CaptureError, match=r"needs more memory to read than Cairn gives a PDF"):
        read_file(pdf)
    child("loop", "sleep 30")
    monkeypatch.setattr(pdf_reader, "READ_SECONDS", 0.5)
    with pytest.raises(CaptureError, match=r"^hostile\.pdf took the PDF reader longer than 0\.5 s, so it was "
                                           r"stopped; nothing was imported\.$"):
        read_file(pdf)


def test_a_pdfs_bookmarks_are_its_headings_and_a_hash_line_still_is_none(tmp_path, store, indexer):
    """Issue 24 item 3: the headings of a PDF are the ones it really has, its outline (bookmarks), placed
    where each title is printed on its page; text before the first is under none; `# ...` is no heading."""
    pages = ["Preface\nWhy this manual exists and who it is for.",
             "1 Installing\nRun the installer.\n# make install\n1.1 Checking\nRun the tests after.",
             "2 Using\nStart it with no arguments."]
    pdf = _write(tmp_path / "manual.pdf", outlined_pdf(pages, [("1 Installing", 1, 0), ("1.1 Checking", 1, 1),
                                                                 ("2 Using", 2, 0), ("Nowhere printed", 2, 1)]))
    captured = read_file(pdf)
    assert [e[:2] for e in captured.outline] == [[0, "1 Installing"], [1, "1.1 Checking"], [1, "Nowhere printed"],
                                                 [0, "2 Using"]]
    at = {title: offset for _, title, offset in captured.outline}
    assert captured.source[at["1.1 Checking"]:].startswith("1.1 Checking")
    assert at["Nowhere printed"] == captured.page_starts[2]  # not printed on its page: the page's start
    node = capture_file(store, pdf).node
    indexer.run()
    chunks = store.db.execute("SELECT text, heading_path FROM chunks WHERE node_id = ? ORDER BY chunk_idx",
                              (node["id"],)).fetchall()
    under = [(tuple(json.loads(c["heading_path"])), c["text"]) for c in chunks]
    assert under[0][0] == () and "Why this manual" in under[0][1]
    by_path = dict(under)
    assert "# make install" in by_path["1 Installing",] and "Run the tests" in by_path["1 Installing", "1.1 Checking"]
    assert "Start it" in by_path["2 Using",]
    assert not any("make install" in " ".join(path) for path, _ in under)


def test_a_folder_report_counts_as_skipped_only_files_it_tried(cairn_cmd, cli_env, tmp_path):
    """Issue 26 walkthrough: importing a vault holding one file of those types, a LICENSE and a .base file said
    "1 PDF, text or HTML file in …: 1 created, 0 updated, 0 unchanged, 2 skipped": the two files of
    no type Cairn reads were counted among that one file's outcomes. They are listed under "Not
    imported" only."""
    env = _env(cli_env)
    folder = tmp_path / "vault"
    _write(folder / "note.md", b"# A note\nText.")
    _write(folder / "bees.txt", b"Bee notes\nA hive keeps its temperature near 35 degrees.")
    _write(folder / "LICENSE", b"MIT")
    done = subprocess.run([*cairn_cmd, "import", str(folder), "--db", str(tmp_path / "v.db"), "--no-index"], env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert re.search(r"1 PDF, text or HTML file in \S+: 1 created, 0 updated, 0 unchanged, 0 skipped", done.stdout), \
        done.stdout
    assert "Not imported (1):" in done.stdout and "LICENSE: a file without an extension" in done.stdout
