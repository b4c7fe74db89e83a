"""Cairn → files, the two building blocks: `render_note` (a node as its note file, read back by the real
importer) and `write_atomic` / the vault trash (a kill at any moment leaves a whole file, nothing is
ever replaced)."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import InvalidInput, NotFound, disk_full_message
from core.vault.atomic import TEMP_SUFFIX, VaultWriteError, move_to_trash, restore_from_trash, write_atomic
from core.vault.note_file import render_note
from core.vault.parse import parse_note

ROOT = Path(__file__).resolve().parent.parent
OBSIDIAN = ROOT.parent / "shared" / "evaldata" / "vault-obsidian-tasks-docs"


# -- helpers -------------------------------------------------------------------------------------
def node_from(text: str, rel: str) -> tuple[dict, list[tuple[str, str]]]:
    """The node an import of `text` makes (as core.vault.sync stores it), and the edges of its cairn_edges."""
    p = parse_note(text.encode("utf-8"), rel)
    meta: dict = {"vault": {"root": "/vault", "path": rel, "sha256": p.sha}}
    if p.aliases:
        meta["aliases"] = p.aliases
    if p.extra:
        meta["frontmatter"] = p.extra
    node = {"id": 7, "title": p.title, "source": p.source, "description": p.fields.get("description", ""),
            "link": p.fields.get("link"), "event_date": p.fields.get("event_date"),
            "type": p.fields.get("type", "note"), "dimensions": p.dims, "metadata": meta,
            "chunk_status": "done", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"}
    return node, [(link.target, link.explanation) for link in p.links if link.kind == "edge"]


def wanted(node: dict, edges=()) -> dict:
    meta = node.get("metadata") or {}
    return {"title": node["title"], "source": node["source"], "dims": list(node["dimensions"]),
            "aliases": meta.get("aliases", []), "extra": meta.get("frontmatter", {}),
            "description": node["description"], "link": node["link"], "event_date": node["event_date"],
            "type": node["type"], "edges": [(t, w) for t, w in edges]}


def read_back(text: str, rel: str, *, warnings: bool = False) -> dict:
    p = parse_note(text.encode("utf-8"), rel)
    assert warnings or not p.warnings, p.warnings
    return {"title": p.title, "source": p.source, "dims": p.dims, "aliases": p.aliases, "extra": p.extra,
            "description": p.fields.get("description", ""), "link": p.fields.get("link"),
            "event_date": p.fields.get("event_date"), "type": p.fields.get("type", "note"),
            "edges": [(link.target, link.explanation) for link in p.links if link.kind == "edge"]}


def top_keys(text: str) -> list[str]:
    import yaml

    head = text.lstrip("\ufeff").split("\n---", 1)[0] if text.lstrip("\ufeff").startswith("---") else ""
    return [str(k) for k in (yaml.safe_load(head.split("\n", 1)[1]) or {})] if head else []


def edit(node: dict) -> dict:
    """What a user might change in Cairn: text, title, dimensions, description, date, link."""
    node = {**node, "metadata": dict(node.get("metadata") or {})}
    node["source"] = node["source"] + "\nA line added in Cairn, with [[Introduction]] and ünïcode ☕.\n"
    node["title"] = "Renamed in Cairn: part 2"
    node["dimensions"] = [*node["dimensions"], "cairn-made", "two words"]
    node["description"] = "Said in Cairn"
    node["event_date"] = "2024-08"
    node["link"] = "https://example.com/a?b=c"
    return node


# -- render_note: the real Obsidian vault --------------------------------------------------------
def _obsidian_notes() -> list[Path]:
    if not OBSIDIAN.is_dir():
        pytest.skip(f"the Obsidian vault {OBSIDIAN} is not on this machine")
    return sorted(OBSIDIAN.rglob("*.md"))


def test_real_vault_notes_render_back_byte_for_byte_and_take_cairn_edits():
    notes = _obsidian_notes()
    assert len(notes) > 50
    for path in notes:
        rel = path.relative_to(OBSIDIAN).as_posix()
        text = path.read_text(encoding="utf-8")
        node, edges = node_from(text, rel)
        # An unchanged note gives its file back exactly: it is never rewritten.
        assert render_note(node, existing_text=text, edges=edges) == text, rel

        changed = edit(node)
        new_edges = [*edges, ("Introduction", "Cairn linked these")]
        out = render_note(changed, existing_text=text, edges=new_edges)
        assert read_back(out, rel) == wanted(changed, new_edges), rel
        assert render_note(changed, existing_text=out, edges=new_edges) == out, rel
        # The user's keys stay, in their order, ahead of the ones Cairn added.
        before = top_keys(text)
        assert top_keys(out)[:len(before)] == before, rel
        assert "cairn_id" not in out and "cairn_db" not in out


# -- render_note: hand-made files ------------------------------------------------------------------
HAND_MADE = {
    "tags-and-aliases.md": (
        "---\n"
        "# my own notes about this note\n"
        "aliases: First name, Second name\n"
        "tags: [project/alpha, reading]   # flow style, kept\n"
        "status: draft\n"
        "nested:\n"
        "  owner: {name: Ana, roles: [editor, 'reviewer']}\n"
        "  when: 2023-05-01\n"
        "rating: 4.5\n"
        "---\n"
        "# Tags and aliases\n\nText with an inline #idea and a [[Link|shown]] and ![[embed.png]].\n"),
    "no-frontmatter.md": "# A heading that is the title\n\nJust text, a [[Wiki link]] and `#not-a-tag`.\n",
    "from the name.md": "No heading at all; the file name is the title.\n",
    "crlf.md": "---\r\ntitle: Windows note\r\ntag: one two\r\ncreated: 2024-01-02\r\n---\r\nLine one\r\nLine two\r\n",
    "unicode.md": ("---\ntitle: Café ☕ – ünïcode\nüberschrift: Grüße\nalias: 日本語\nurl: https://例え.jp/\n"
                   "event_date: 1981\n---\nText in 日本語 and émojis 🎉 #标签\n"),
    "exported.md": ("---\ncairn_id: 12\ncairn_db: 0123456789abcdef\ntitle: Exported\ndimensions:\n- a b\n- c\n"
                    "cairn_type: idea\ncairn_edges:\n- to: '[[Other]]'\n  explanation: because\n---\nbody\n"),
    "dots.md": "---\ndescription: ends with dots\n...\nbody after a YAML document end\n",
    "bom.md": "\ufeff---\nkind: bom\n---\nA file with a byte order mark.\n",
    "empty-frontmatter.md": "---\n---\nNothing in the frontmatter.\n",
    "invalid.md": "---\ntitle: [unclosed\n---\nThe whole file is the text.\n",
    "anchors.md": "---\nbase: &b {x: 1}\ncopy: *b\ntitle: Anchored\n---\ntext\n",
    "looks-like-frontmatter.md": "---\n---\n---\nnot: frontmatter\n---\nThe text starts with a rule.\n",
}


@pytest.mark.parametrize("rel", sorted(HAND_MADE))
def test_hand_made_notes_round_trip(rel):
    text = HAND_MADE[rel]
    node, edges = node_from(text, rel)
    out = render_note(node, existing_text=text, edges=edges)
    if "cairn_db" in text:
        assert "cairn_id" not in out and "cairn_db" not in out
        # (without cairn_db the dimensions list no longer stops inline tags; this body has none)
    else:
        assert out == text, "an unchanged note must give its file back byte for byte"
    assert read_back(out, rel, warnings=rel == "invalid.md") == wanted(node, edges)

    changed = edit(node)
    new_edges = [("Other", "edited in Cairn")]
    out = render_note(changed, existing_text=text, edges=new_edges)
    assert read_back(out, rel) == wanted(changed, new_edges)
    assert render_note(changed, existing_text=out, edges=new_edges) == out
    if "\r\n" in text:
        head = out[:len(out) - len(changed["source"])]
        assert head.startswith("---\r\n") and "\n" not in head.replace("\r\n", ""), "CRLF frontmatter stays CRLF"
    if text.startswith("\ufeff"):
        assert out.startswith("\ufeff")


def test_keys_order_comments_and_unknown_values_are_the_users():
    text = HAND_MADE["tags-and-aliases.md"]
    node, edges = node_from(text, "tags-and-aliases.md")
    node["source"] += "More text.\n"
    node["metadata"]["aliases"] = ["First name", "Second name", "Third"]
    out = render_note(node, existing_text=text, edges=edges)
    assert read_back(out, "tags-and-aliases.md") == wanted(node, edges)
    # Only the aliases line changed: the comment, the flow list and its comment, the nested value as written.
    assert out.startswith("---\n# my own notes about this note\naliases:\n- First name\n- Second name\n- Third\n"
                          "tags: [project/alpha, reading]   # flow style, kept\nstatus: draft\nnested:\n"
                          "  owner: {name: Ana, roles: [editor, 'reviewer']}\n  when: 2023-05-01\nrating: 4.5\n---\n")
    assert out.endswith("[[Link|shown]] and ![[embed.png]].\nMore text.\n")


def test_a_note_with_only_a_title_and_text_gets_no_frontmatter():
    plain = {"title": "Groceries", "source": "# Groceries\n\n- eggs\n", "dimensions": [], "description": "",
             "link": None, "event_date": None, "type": "note"}
    assert render_note(plain, existing_text=None) == "# Groceries\n\n- eggs\n"
    named = {**plain, "source": "- eggs\n"}
    assert render_note(named, existing_text=None) == "- eggs\n"  # Groceries.md gives the title
    assert render_note(named, existing_text=None, rel="Shopping/list.md") == "---\ntitle: Groceries\n---\n- eggs\n"
    unsafe = {**named, "title": "Q3: plans/ideas"}  # its file is "Q3 plans ideas.md": the title needs the key
    out = render_note(unsafe, existing_text=None)
    assert out == "---\ntitle: 'Q3: plans/ideas'\n---\n- eggs\n"
    assert read_back(out, "Q3 plans ideas.md")["title"] == "Q3: plans/ideas"


def test_text_that_starts_like_frontmatter_stays_the_text():
    node = {"title": "Rule", "source": "---\nnot: a key\n---\nbody\n", "dimensions": [], "description": "",
            "link": None, "event_date": None, "type": "note"}
    out = render_note(node, existing_text=None)
    assert read_back(out, "Rule.md")["source"] == node["source"]
    assert read_back(out, "Rule.md")["extra"] == {}


def test_fields_removed_in_cairn_leave_the_file_and_nothing_device_specific_enters_it():
    text = ("---\nzeta: 1\ndescription: old\ntags: [a, b]\nlink: https://x.org\ndate: 2020-02-02\nstatus: done\n"
            "cairn_edges:\n- to: '[[B]]'\n  explanation: old edge\n---\nbody\n")
    node, _ = node_from(text, "n.md")
    node.update(description="", dimensions=["b"], link=None, event_date=None)
    del node["metadata"]["frontmatter"]["status"]
    node["metadata"]["vault"]["mtime"] = 123.0
    out = render_note(node, existing_text=text, edges=[])
    assert out == "---\nzeta: 1\ntags:\n- b\n---\nbody\n"
    # A node not imported from a vault leaves the file's other keys alone.
    loose = {**node, "metadata": {}}
    assert "status: done" in render_note(loose, existing_text=text, edges=[])
    for word in ("cairn_id", "cairn_db", "sha256", "mtime", "/vault", "chunk_status", "updated_at"):
        assert word not in out


def test_dimensions_that_cannot_be_tags_go_under_dimensions():
    text = "---\ntags: [a]\n---\nbody #inline\n"
    node, edges = node_from(text, "n.md")
    node["dimensions"] = ["a", "inline", "b", "two words", "c,d", "e"]
    out = render_note(node, existing_text=text, edges=edges)
    assert read_back(out, "n.md")["dims"] == node["dimensions"]
    assert "tags:\n- a\n- inline\n- b\ndimensions:\n- two words\n- c,d\n- e\n" in out
    # Without tags in the file, the list is `dimensions`; tags the body holds are not repeated.
    node, edges = node_from("body #inline\n", "m.md")
    node["dimensions"] = ["new", "inline"]
    out = render_note(node, existing_text="body #inline\n", edges=edges)
    assert out == "---\ndimensions:\n- new\n---\nbody #inline\n"


def test_edges_go_to_cairn_edges_and_body_links_are_left_alone():
    text = "See [[Alpha]] and [b](Beta.md).\n"
    node, _ = node_from(text, "n.md")
    out = render_note(node, existing_text=text, edges=[("Gamma", "Cairn found it"), ("Delta", "")])
    assert out.endswith("\n---\n" + text)
    back = parse_note(out.encode(), "n.md")
    assert [(link.target, link.kind) for link in back.links] == [
        ("Alpha", "wiki"), ("Beta.md", "md"), ("Gamma", "edge"), ("Delta", "edge")]


# -- render_note: any node -----------------------------------------------------------------------
_WORD = st.text("abcdefghijklmnopqrstuvwxyzABCXYZäöü日本0123456789-_/.", min_size=1, max_size=12)
_PHRASE = st.lists(_WORD, min_size=1, max_size=4).map(" ".join)
_KNOWN = {"title", "aliases", "alias", "tags", "tag", "dimensions", "date", "event_date", "link", "url",
          "description", "cairn_id", "cairn_db", "cairn_type", "cairn_edges"}
_STORABLE = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")  # what the store takes
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(_STORABLE, max_size=20),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_WORD, inner, max_size=3),
                     max_leaves=8)


@st.composite
def nodes(draw) -> tuple[dict, list[tuple[str, str]]]:
    source = draw(st.lists(st.sampled_from(["a", "b", " ", "\n", "\r\n", "#", "#tag", "# Head\n", "---\n",
                                            "[[x]]", "é", ":", "`"]), max_size=30).map("".join))
    inline = parse_note(("---\n---\n" + source).encode(), "Note.md").dims
    chosen = draw(st.lists(_PHRASE.filter(lambda d: not d.startswith("#")), max_size=4,
                           unique_by=str.lower))
    dims = list({d.lower(): d for d in reversed([*chosen, *inline])}.values())[::-1]
    dims = draw(st.permutations(dims)) if dims else []
    extra = draw(st.dictionaries(_WORD.filter(lambda k: k.lower() not in _KNOWN), _JSON, max_size=3))
    aliases = draw(st.lists(_PHRASE, max_size=3, unique=True))
    year = draw(st.integers(1, 9999))
    event = draw(st.sampled_from([None, f"{year:04d}", f"{year:04d}-03", f"{year:04d}-03-31"]))
    meta: dict = {"vault": {"path": "Note.md"}}
    if aliases:
        meta["aliases"] = aliases
    if extra:
        meta["frontmatter"] = extra
    node = {"title": draw(_PHRASE | st.just("Note")), "source": source, "dimensions": dims,
            "description": draw(st.text(_STORABLE, max_size=20)),
            "link": draw(st.none() | _WORD.map(lambda w: "https://example.com/" + w)),
            "event_date": event, "type": draw(st.sampled_from(["note", "idea"])), "metadata": meta}
    edges = draw(st.lists(st.tuples(_PHRASE.filter(lambda t: not t.startswith(("/", "."))),
                                    st.text("abc .", max_size=10).map(str.strip)), max_size=2))
    return node, edges


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes(), nodes())
def test_any_node_renders_to_a_file_that_reads_back_as_it(first, second):
    node, edges = first
    out = render_note(node, existing_text=None, edges=edges)
    assert read_back(out, "Note.md") == wanted(node, edges)
    assert render_note(node, existing_text=out, edges=edges) == out
    # The same file, now holding another version of the note (every field changed).
    node2, edges2 = second
    out2 = render_note(node2, existing_text=out, edges=edges2)
    assert read_back(out2, "Note.md") == wanted(node2, edges2)
    assert render_note(node2, existing_text=out2, edges=edges2) == out2


# -- write_atomic ----------------------------------------------------------------------------------
def _temp_files(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(TEMP_SUFFIX))


def test_write_atomic_writes_exactly_makes_folders_and_keeps_the_permission_bits(tmp_path):
    note = tmp_path / "a" / "b" / "Note.md"
    write_atomic(note, "line\r\nünï ☕\n")
    assert note.read_bytes() == "line\r\nünï ☕\n".encode()
    os.chmod(note, 0o640)
    write_atomic(note, "second")
    assert note.read_text() == "second" and stat.S_IMODE(os.stat(note).st_mode) == 0o640
    link = tmp_path / "a" / "Link.md"
    link.symlink_to(note)
    write_atomic(link, "through the link")
    assert link.is_symlink() and note.read_text() == "through the link"
    assert _temp_files(note.parent) == [] and _temp_files(link.parent) == []
    with pytest.raises(InvalidInput):
        write_atomic(tmp_path / "a" / "b", "a folder")
    with pytest.raises(InvalidInput):
        write_atomic(note / "under a file.md", "x")


def test_write_atomic_on_a_full_disk_says_so_and_leaves_the_old_file(tmp_path):
    import shutil

    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        note = disk / "Note.md"
        write_atomic(note, "the old text\n")
        with pytest.raises(VaultWriteError) as err:
            write_atomic(note, "x" * 2_000_000)
        assert str(err.value) == disk_full_message(note)
        assert note.read_text() == "the old text\n"
        assert _temp_files(disk) == []
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from core.vault.atomic import write_atomic
    path, a, b = Path(sys.argv[1]), Path(sys.argv[2]).read_text(), Path(sys.argv[3]).read_text()
    print("ready", flush=True)
    while True:
        write_atomic(path, b)
        write_atomic(path, a)
""")


def test_a_kill_at_any_moment_leaves_the_old_or_the_new_file_whole(tmp_path, store):
    from core.vault.sync import import_vault

    vault = tmp_path / "vault"
    note = vault / "folder" / "Note.md"
    a = "alpha " * 150_000 + "\nend of alpha\n"  # ~0.9 MB
    b = "bravo, a longer line\n" * 60_000 + "end of bravo\n"  # ~1.3 MB
    (tmp_path / "a.txt").write_text(a)
    (tmp_path / "b.txt").write_text(b)
    write_atomic(note, a)
    rng = random.Random(23)
    seen = {a: 0, b: 0}
    leftovers = 0
    for _ in range(30):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(note), str(tmp_path / "a.txt"),
                                  str(tmp_path / "b.txt")], cwd=ROOT, stdout=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL)
        try:
            assert child.stdout.readline() == b"ready\n"
            # A random moment: before the first write, inside one, between the fsync and the rename ...
            rng_delay = rng.random() * 0.08
            try:
                child.wait(timeout=rng_delay)
            except subprocess.TimeoutExpired:
                pass
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait()
            child.stdout.close()
        content = note.read_text()
        assert content in seen, "a torn file"
        seen[content] += 1
        strays = [n for n in os.listdir(note.parent) if n != "Note.md"]
        assert all(n.startswith(".") and n.endswith(TEMP_SUFFIX) for n in strays), strays
        leftovers += bool(strays)
    # Nothing the kills left is a note: the importer finds exactly one.
    report = import_vault(store, vault)
    assert (report.files, report.created, report.skipped) == (1, 1, [])
    # The next write clears the temporary files of the killed writers.
    write_atomic(note, "after the kills\n")
    assert os.listdir(note.parent) == ["Note.md"] and note.read_text() == "after the kills\n"
    print(f"kills: {seen[a]} left alpha, {seen[b]} bravo, {leftovers} left a temporary file")


# -- the vault's trash -----------------------------------------------------------------------------
def test_trash_and_restore_keep_folders_and_never_replace_a_file(tmp_path):
    vault = tmp_path / "vault"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Projects" / "Plan.md").write_text("first plan")
    assert move_to_trash(vault, "Projects/Plan.md") == ".trash/Projects/Plan.md"
    assert not (vault / "Projects" / "Plan.md").exists()
    (vault / "Projects" / "Plan.md").write_text("second plan")
    assert move_to_trash(vault, "Projects/Plan.md") == ".trash/Projects/Plan 2.md"
    (vault / "Projects" / "Plan.md").write_text("third plan")
    assert move_to_trash(vault, "Projects/Plan.md") == ".trash/Projects/Plan 3.md"
    assert (vault / ".trash" / "Projects" / "Plan.md").read_text() == "first plan"
    assert (vault / ".trash" / "Projects" / "Plan 2.md").read_text() == "second plan"

    (vault / "Projects" / "Plan.md").write_text("a new plan the user made")
    assert restore_from_trash(vault, ".trash/Projects/Plan.md", "Projects/Plan.md") == "Projects/Plan 2.md"
    assert (vault / "Projects" / "Plan.md").read_text() == "a new plan the user made"
    assert (vault / "Projects" / "Plan 2.md").read_text() == "first plan"
    assert restore_from_trash(vault, ".trash/Projects/Plan 3.md", "Gone/Deep/Plan.md") == "Gone/Deep/Plan.md"
    assert restore_from_trash(vault, ".trash/Projects/Plan 2.md", "Plan.md") == "Plan.md"
    assert not (vault / ".trash" / "Projects").exists()  # emptied: removed
    assert sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md")) == [
        "Gone/Deep/Plan.md", "Plan.md", "Projects/Plan 2.md", "Projects/Plan.md"]
    with pytest.raises(NotFound):
        move_to_trash(vault, "Projects/Missing.md")
    for bad in ("../outside.md", "/etc/passwd", ".trash/Plan.md"):
        with pytest.raises(InvalidInput):
            move_to_trash(vault, bad)
    with pytest.raises(InvalidInput):
        restore_from_trash(vault, "Plan.md", "Again.md")
