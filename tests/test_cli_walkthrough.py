"""What a walkthrough of every `cairn` verb found, run in-process through tui.cli.main on real files:
the README's verb table matches the parser, counts and paths are checked (usage errors exit 2),
`cairn backup` never writes over a file, `cairn config set` refuses keys nothing reads, a refused
`cairn ask` leaves no empty chat, a file that is not a database is one clear sentence."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path

import pytest

from tui.cli.main import build_parser, main

README = Path(__file__).resolve().parent.parent / "README.md"
COMMON = {"-h", "--help", "--db", "--debug", "--json"}


def cli(capsys, *argv):
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def one_sentence(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.startswith("cairn")]
    assert len(lines) == 1 and "Traceback" not in err and "unexpected error" not in err, err
    return lines[0]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path, capsys) -> Path:
    path = tmp_path / "walk.db"
    rc, out, err = cli(capsys, "add", "--db", str(path), "A note about otters")
    assert rc == 0, err
    return path


# -- README -----------------------------------------------------------------------------------------
def _readme_rows() -> dict[str, str]:
    """verb -> the table's first cell(s) naming it (a row may name two verbs: `cairn trash`, `cairn restore ID`)."""
    text = README.read_text(encoding="utf-8")
    table = text.split("## Command line", 1)[1].split("\n\n", 3)
    rows: dict[str, str] = {}
    for line in "\n".join(table[:3]).splitlines():
        if not line.startswith("| `cairn"):
            continue
        cell = line.split("` |", 1)[0]
        for verb in re.findall(r"`cairn ([a-z]+)", cell + "`"):
            rows[verb] = rows.get(verb, "") + cell
    return rows


def _verbs():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    # `__complete` is the completion scripts' callback (tui/cli/completion.py), not a verb for people
    return {name: p for name, p in sub.choices.items() if not name.startswith("__")}


def test_readme_table_names_every_verb_and_each_of_its_options():
    rows = _readme_rows()
    rows["context"] = rows["context"].replace("[same options]", rows["ask"])  # "same options" as ask
    verbs = _verbs()
    assert set(verbs) - set(rows) == set(), "verbs missing from the README table"
    assert set(rows) - set(verbs) == set(), "README rows for verbs the parser does not have"
    for name, p in verbs.items():
        for action in p._actions:
            options = [o for o in action.option_strings if o not in COMMON]
            if action.option_strings and options:
                assert any(o in rows[name] for o in options), f"{name}: {options} not in the README row {rows[name]!r}"


# -- counts and paths ------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["list", "-n", "0"], ["list", "--limit", "-1"], ["hubs", "-n", "0"],
                                  ["search", "otters", "-n", "-1"], ["chats", "-n", "0"],
                                  ["integrate", "1", "-n", "0"], ["links", "1", "-n", "-5"]])
def test_a_limit_below_one_is_a_usage_error(capsys, db, argv):
    rc, out, err = cli(capsys, *argv, "--db", str(db))
    assert rc == 2 and out == ""
    assert "--limit/-n: must be at least 1" in err, err


@pytest.mark.parametrize("argv", [["import", ""], ["export", " "], ["watch", ""], ["backup", ""],
                                  ["eval", "beir", ""]])
def test_an_empty_path_is_a_usage_error_not_the_current_folder(capsys, db, tmp_path, monkeypatch, argv):
    folder = tmp_path / "cwd"
    folder.mkdir()
    (folder / "stray.md").write_text("# Stray\nnot to be imported", encoding="utf-8")
    monkeypatch.chdir(folder)
    before = sha(db)
    rc, out, err = cli(capsys, *argv, "--db", str(db))
    assert rc == 2 and "an empty path is not a file or folder" in err, err
    assert sha(db) == before and sorted(os.listdir(folder)) == ["stray.md"]


def test_an_empty_db_option_is_a_usage_error(capsys):
    rc, out, err = cli(capsys, "--db", "", "list")
    assert rc == 2 and "argument --db: an empty path" in err, err


# -- backup ----------------------------------------------------------------------------------------
def test_backup_into_a_folder_then_never_over_a_file_nor_the_database(capsys, db, tmp_path):
    folder = tmp_path / "backups"
    folder.mkdir()
    rc, out, err = cli(capsys, "backup", str(folder), "--db", str(db), "--json")
    assert rc == 0, err
    first = Path(json.loads(out)["backup"])
    assert first.parent == folder and first.name.startswith("walk-backup-") and first.suffix == ".db"

    existing = tmp_path / "keep.db"
    existing.write_bytes(b"an earlier backup")
    rc, out, err = cli(capsys, "backup", str(existing), "--db", str(db))
    assert rc == 1 and one_sentence(err) == f"cairn: {existing} already exists; give a new file name (nothing was written)."
    assert existing.read_bytes() == b"an earlier backup"

    before = sha(db)
    rc, out, err = cli(capsys, "backup", str(db), "--db", str(db))
    assert rc == 1 and "is the database itself" in one_sentence(err)
    assert sha(db) == before

    rc, out, err = cli(capsys, "list", "--db", str(first), "--json")
    assert rc == 0 and [n["title"] for n in json.loads(out)] == ["A note about otters"]


# -- config ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("key, says", [("no.such", "unknown table `[no]` (known at the top level: user_name, chat,"),
                                        ("chats.provider", "unknown table `[chats]`; did you mean `[chat]`?"),
                                        ("foo", "unknown setting `foo`"), ("chat.a.b", "is not a setting"),
                                        ("ui.colour", "unknown setting `ui.colour` (known in [ui]: theme, animations)"),
                                        ("mcp.allow", "unknown setting `mcp.allow`; did you mean `allow_edits`?")])
def test_config_set_refuses_a_key_nothing_reads(capsys, key, says):
    from core.paths import config_dir

    rc, out, err = cli(capsys, "config", "set", key, "1")
    assert rc == 1 and says in one_sentence(err) and "Nothing was changed" in err, err
    assert not (config_dir() / "config.toml").exists()


def test_config_set_still_takes_known_keys_and_keymap_ids(capsys):
    from core import config

    for key, value in (("ui.theme", "nord"), ("keymap.quick_capture", "ctrl+k"), ("user_name", "Ada")):
        rc, out, err = cli(capsys, "config", "set", key, value)
        assert rc == 0, err
    cfg = config.load()
    assert (cfg.ui.theme, cfg.keymap, cfg.user_name) == ("nord", {"quick_capture": "ctrl+k"}, "Ada")


def test_config_show_with_a_key_is_a_usage_error(capsys):
    rc, out, err = cli(capsys, "config", "show", "chat.provider")
    assert rc == 2 and out == "" and "takes no KEY" in one_sentence(err)


# -- ask -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, says, code", [
    (["ask", ""], "The message is empty.", 1),
    (["ask", "   "], "The message is empty.", 1),
    (["ask", "otters?", "--focus", "999"], "There is no node 999.", 1),
    (["ask", "otters?", "--focus", "1,x"], "--focus takes node ids", 1),
    (["ask", "otters?", "--focus", "1", "--primary", "2"], "--primary 2 is not one of the --focus ids", 2),
    (["context", "otters?", "--focus", "1", "--primary", "2"], "--primary 2 is not one of the --focus ids", 2),
])
def test_a_refused_ask_leaves_no_empty_chat(capsys, db, argv, says, code):
    rc, out, err = cli(capsys, *argv, "--db", str(db))
    assert rc == code and says in one_sentence(err), err
    rc, out, err = cli(capsys, "chats", "--db", str(db), "--json")
    assert rc == 0 and json.loads(out) == []


def test_ask_help_says_how_to_use_a_model(capsys):
    # The offline answer says "see `cairn ask --help`": the help must then say how to configure a provider.
    from core.providers.offline import LABEL

    assert "cairn ask --help" in LABEL
    rc, out, err = cli(capsys, "ask", "--help")
    assert rc == 0
    flat = " ".join(out.split())
    assert "cairn config set chat.provider anthropic" in flat and "$ANTHROPIC_API_KEY" in flat


# -- files -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("verb", [["list"], ["add", "x"], ["show", "1"]])
def test_a_file_that_is_not_a_database_is_one_clear_sentence(capsys, tmp_path, verb):
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is a text file, not SQLite " * 200)
    before = sha(path)
    rc, out, err = cli(capsys, *verb, "--db", str(path))
    assert rc == 1 and out == ""
    assert one_sentence(err) .startswith(f"cairn: {path} is damaged or not a Cairn database"), err
    assert sha(path) == before


def test_stdin_errors_read_as_a_sentence(capsys, monkeypatch, tmp_path):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff\xfe")))
    rc, out, err = cli(capsys, "add", "-", "--db", str(tmp_path / "s.db"))
    assert rc == 1
    assert one_sentence(err) == "cairn: Standard input is not valid UTF-8 (byte 0xff at offset 0); nothing was saved."
    assert not (tmp_path / "s.db").exists()


# -- edit, index, export wording -------------------------------------------------------------------
def test_an_edit_that_changes_nothing_says_so(capsys, db, monkeypatch):
    monkeypatch.setenv("EDITOR", "true")  # the editor exits without touching the file
    monkeypatch.delenv("VISUAL", raising=False)
    rc, out, err = cli(capsys, "edit", "1", "--db", str(db))
    assert rc == 0 and out.strip() == "Node 1 is unchanged: A note about otters", (out, err)
    rc, out, err = cli(capsys, "edit", "1", "--title", "A note about otters", "--db", str(db))
    assert rc == 0 and out.startswith("Node 1 is unchanged"), out
    rc, out, err = cli(capsys, "edit", "1", "--title", "Otters", "--db", str(db))
    assert rc == 0 and out.startswith("Updated node 1: Otters"), out


def _editor_that_writes(tmp_path, text: str, status: int) -> str:
    """$EDITOR: a script that writes `text` into the file it is given, then exits with `status`."""
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\nopen(sys.argv[1], 'w').write({text!r})\nsys.exit({status})\n")
    return f"{sys.executable} {script}"


def test_an_editor_that_fails_keeps_the_text_it_left(capsys, db, monkeypatch, tmp_path):
    """vim's :cq after an hour of writing: nothing is saved, and the text is in a file the error names."""
    monkeypatch.setenv("EDITOR", _editor_that_writes(tmp_path, "An hour of writing about otters.\n", 1))
    monkeypatch.delenv("VISUAL", raising=False)
    rc, out, err = cli(capsys, "edit", "1", "--db", str(db))
    assert rc == 1 and "The editor exited with status 1; nothing was changed (the text it left is kept in " in err
    kept = Path(re.search(r"kept in (\S+\.md)\)", err).group(1))
    assert kept.read_text() == "An hour of writing about otters.\n"
    monkeypatch.setenv("EDITOR", "false")  # exits 1 without writing: there is no edit to keep
    rc, out, err = cli(capsys, "edit", "1", "--db", str(db))
    assert rc == 1 and err.strip().endswith("nothing was changed."), err
    assert sorted(kept.parent.iterdir()) == [kept]


def test_a_merge_declined_after_an_edit_keeps_the_edit(capsys, db, monkeypatch, tmp_path):
    import io

    rc, out, err = cli(capsys, "add", "Sea otters hold hands.", "--title", "Otters again", "--db", str(db))
    assert rc == 0, err
    monkeypatch.setenv("EDITOR", _editor_that_writes(tmp_path, "The merged text, rewritten.\n", 0))
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    rc, out, err = cli(capsys, "merge", "1", "2", "--edit", "--db", str(db))
    assert rc == 1 and "Cancelled; nothing was changed." in err, (out, err)
    kept = Path(re.search(r"the edited text is kept in (\S+\.md)", err).group(1))
    assert kept.read_text() == "The merged text, rewritten.\n"


def test_an_edit_in_the_same_clock_tick_as_the_last_write_says_updated(capsys, db, monkeypatch):
    from core import clock

    frozen = clock.now()
    monkeypatch.setattr(clock, "now", lambda: frozen)  # both writes share one updated_at
    rc, out, err = cli(capsys, "edit", "1", "--title", "Otters at dusk", "--db", str(db))
    assert rc == 0 and out.startswith("Updated node 1: Otters at dusk"), out
    rc, out, err = cli(capsys, "edit", "1", "--title", "Otters at dawn", "--db", str(db))
    assert rc == 0 and out.startswith("Updated node 1: Otters at dawn"), out


def test_index_and_export_count_in_words_and_draw_no_empty_bar(capsys, db, tmp_path):
    rc, out, err = cli(capsys, "index", "--db", str(db))
    assert rc == 0 and out.startswith("Indexed 1 node (1 chunk; "), out
    rc, out, err = cli(capsys, "index", "--db", str(db), "--json")
    assert rc == 0 and json.loads(out)["indexed"] == 0 and err == ""  # nothing pending: no 0/0 progress bar
    rc, out, err = cli(capsys, "export", str(tmp_path / "out"), "--db", str(db))
    assert rc == 0 and out.startswith("Exported 1 node and 0 edges to "), out


# -- search ----------------------------------------------------------------------------------------
def test_no_match_by_meaning_says_when_nodes_wait_for_indexing(capsys, db):
    rc, out, err = cli(capsys, "search", "otters", "--mode", "vector", "--db", str(db))
    assert rc == 0 and out.splitlines() == [
        "No matches.",
        "Not indexed yet: 1 node; run `cairn index` so that meaning search sees them (keyword search, --mode fts, "
        "already does)."]
    rc, out, err = cli(capsys, "search", "otters", "--mode", "vector", "--db", str(db), "--json")
    assert rc == 0 and json.loads(out) == []  # --json keeps its documented shape
    rc, out, err = cli(capsys, "index", "--db", str(db))
    assert rc == 0, err
    rc, out, err = cli(capsys, "search", "zebra crossing", "--mode", "vector", "--db", str(db))
    assert "Not indexed yet" not in out


# -- import ----------------------------------------------------------------------------------------
def test_importing_another_cairn_database_says_to_open_it_with_db(capsys, db, tmp_path):
    rc, out, err = cli(capsys, "backup", str(tmp_path / "copy.db"), "--db", str(db))
    assert rc == 0, err
    other = tmp_path / "other.db"
    rc, out, err = cli(capsys, "add", "a note elsewhere", "--db", str(other))
    rc, out, err = cli(capsys, "import", str(tmp_path / "copy.db"), "--db", str(other))
    assert rc == 1 and one_sentence(err) == (
        f"cairn: {tmp_path / 'copy.db'} is a Cairn database (a backup or a copy?), not an RA-H OS one; open it with "
        f"`cairn --db {tmp_path / 'copy.db'}`; nothing was imported.")
    rc, out, err = cli(capsys, "list", "--db", str(other), "--json")
    assert [n["title"] for n in json.loads(out)] == ["a note elsewhere"]


# -- the app ---------------------------------------------------------------------------------------
def test_the_app_without_a_terminal_says_so_instead_of_drawing_into_a_pipe(capsys, tmp_path):
    # capsys: stdout is not a terminal, as in `cairn > file` or `cairn | less` from a script
    rc, out, err = cli(capsys, "--db", str(tmp_path / "app.db"))
    assert rc == 1 and out == "" and "\x1b" not in err
    assert one_sentence(err).startswith("cairn: The app needs a terminal")
    assert not (tmp_path / "app.db").exists()


# -- doctor ----------------------------------------------------------------------------------------
def test_doctor_on_a_read_only_database_says_so_instead_of_reporting_a_damaged_index(db):
    from core.ops import doctor
    from core.graph.store import Store

    with Store(db, readonly=True) as store:  # a read-only connection: every write is refused, as for a 444 file
        report = doctor.check(store)
    by_check = {f.check: f for f in report.findings}
    assert "nodes_fts_integrity" not in by_check and "chunks_fts_integrity" not in by_check
    assert by_check["read_only"].count == 1 and "is read-only" in by_check["read_only"].detail
    assert not report.clean and "read_only" not in [f.check for f in report.repairable]


def test_doctor_does_not_offer_a_repair_it_cannot_make_on_a_read_only_database(capsys, db, monkeypatch):
    from core.ops import doctor

    real = doctor._fts_ok
    monkeypatch.setattr(doctor, "_fts_ok", lambda store, table: (False, "attempt to write a readonly database"))
    rc, out, err = cli(capsys, "doctor", "--db", str(db))
    monkeypatch.setattr(doctor, "_fts_ok", real)
    assert rc == 1 and "problem read_only:" in out and "is read-only" in out
    assert "pending" in out and "--repair" not in out  # the node is pending, but a repair cannot write


@pytest.mark.parametrize("argv", [["config", "set"], ["config", "set", "chat.provider"], ["skills", "show"],
                                  ["skills", "edit"], ["skills", "list", "extra"]])
def test_incomplete_commands_exit_2_like_argparse_usage_errors(capsys, argv):
    rc, out, err = cli(capsys, *argv)
    assert rc == 2 and out == "" and one_sentence(err).startswith("cairn: Usage: cairn "), err


def test_chats_counts_one_reply_in_the_singular(capsys, db):
    rc, out, err = cli(capsys, "ask", "Where do otters live?", "--db", str(db))  # offline: no key, no network
    assert rc == 0, err
    rc, out, err = cli(capsys, "chats", "--db", str(db))
    assert rc == 0 and " · 1 reply · " in out and "1 replies" not in out, out


def test_every_argument_of_every_verb_says_what_it_is():
    missing = [f"{name} {a.option_strings or a.dest}" for name, p in _verbs().items() for a in p._actions
               if a.help is None]
    assert missing == []


# -- export ----------------------------------------------------------------------------------------
def test_a_read_only_database_exports_and_its_files_import_again(capsys, db, tmp_path):
    from core.graph.store import Store
    from core.vault.export import export

    with Store(db, readonly=True) as store:  # never exported: no db_id yet, and it cannot be written
        report = export(store, tmp_path / "out")
    assert report.written == 1
    text = (tmp_path / "out" / "A note about otters.md").read_text(encoding="utf-8")
    assert "cairn_id: 1" in text and "A note about otters" in text
    rc, out, err = cli(capsys, "import", str(tmp_path / "out"), "--no-index", "--db", str(tmp_path / "again.db"))
    assert rc == 0 and "1 created" in out, (out, err)


# -- confirmations ---------------------------------------------------------------------------------
class _TerminalAtEOF(__import__("io").StringIO):
    """A terminal on which the user pressed Ctrl-D: input() raises EOFError."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("argv", [["rm", "1"], ["unlink", "1"]])
def test_ctrl_d_at_a_confirmation_cancels_and_changes_nothing(capsys, db, monkeypatch, argv):
    import sys

    rc, out, err = cli(capsys, "add", "Rivers", "--db", str(db))
    rc, out, err = cli(capsys, "link", "1", "2", "-e", "otters live in rivers", "--db", str(db))
    assert rc == 0, err
    with monkeypatch.context() as m:
        m.setattr(sys, "stdin", _TerminalAtEOF(""))
        rc, out, err = cli(capsys, *argv, "--db", str(db))
    assert rc == 1 and one_sentence(err) == "cairn: Cancelled; nothing was changed.", err
    rc, out, err = cli(capsys, "show", "1", "--db", str(db), "--json")
    assert [e["explanation"] for e in json.loads(out)["edges"]] == ["otters live in rivers"]


def test_backup_into_a_new_folder_named_with_a_trailing_slash(capsys, db, tmp_path):
    rc, out, err = cli(capsys, "backup", f"{tmp_path / 'new'}/", "--db", str(db), "--json")
    assert rc == 0, err
    copy = Path(json.loads(out)["backup"])
    assert copy.parent == tmp_path / "new" and copy.name.startswith("walk-backup-") and copy.is_file()


def test_an_edit_over_a_change_made_meanwhile_is_refused_and_kept(capsys, db, monkeypatch, tmp_path):
    """The note changed (the app, a sync, the model) while it was open in $EDITOR: the edit is not written
    over it; it is kept in a file the message names (the app's $EDITOR refuses the same way)."""
    script = tmp_path / "editor.py"
    script.write_text("import sys\n"
                      f"sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})\n"
                      "from core.graph.store import Store\n"
                      f"with Store({str(db)!r}) as s:\n"
                      "    s.update_node(1, source='Changed elsewhere meanwhile.')\n"
                      "open(sys.argv[1], 'w').write('My edit, written in the editor.\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.delenv("VISUAL", raising=False)
    rc, out, err = cli(capsys, "edit", "1", "--db", str(db))
    assert rc == 1 and "Node 1 changed while you were editing" in err, (out, err)
    kept = Path(re.search(r"the edited text is kept in (\S+\.md)", err).group(1))
    assert kept.read_text() == "My edit, written in the editor.\n"
    from core.graph.store import Store
    with Store(db) as s:
        assert s.get_node(1)["source"] == "Changed elsewhere meanwhile."


def test_a_merge_edit_with_json_needs_yes(capsys, db, monkeypatch, tmp_path):
    """--json without --yes prints the plan and writes nothing: an edit made first would be thrown away."""
    rc, out, err = cli(capsys, "add", "Sea otters hold hands.", "--title", "Otters again", "--db", str(db))
    monkeypatch.setenv("EDITOR", _editor_that_writes(tmp_path, "Never asked for.\n", 0))
    monkeypatch.delenv("VISUAL", raising=False)
    rc, out, err = cli(capsys, "merge", "1", "2", "--edit", "--json", "--db", str(db))
    assert rc == 2 and "--edit with --json needs --yes" in err, (out, err)
