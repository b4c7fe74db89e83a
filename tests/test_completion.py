"""Shell completion (issue 17): `cairn completion SHELL` and the `cairn __complete` it calls."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tui.cli.completion import FILES, candidates
from tui.cli.main import build_parser

BIN = Path(sys.executable).parent


def values(words: list[str]) -> list[str]:
    return [v for v, _ in candidates(build_parser(), words)]


def test_verbs_options_and_choices_complete_from_the_parser():
    assert values(["se"]) == ["search"]
    assert "today" in values([""]) and "__complete" not in values([""])  # the hidden verb stays hidden
    assert values(["search", "--mo"]) == ["--mode"]
    assert values(["search", "--mode", ""]) == ["hybrid", "fts", "vector"]
    assert values(["completion", "f"]) == ["fish"]
    assert values(["import", ""]) == [FILES] and values(["list", "--db", ""]) == [FILES]
    assert values(["search", "--mode", "fts", "some", "words", ""]) == []  # free text: nothing to offer


def test_a_node_id_completes_with_its_title_from_the_database_on_the_line(tmp_path, store, db_path):
    a = store.add_node("Sourdough starter", "")
    b = store.add_node("Garden\nplan", "")
    store.update_node(a["id"], source="fed it")
    # most recently changed first (stamped apart: two writes can share a millisecond)
    store.db.execute("UPDATE nodes SET updated_at = '2099-01-01T00:00:00.000Z' WHERE id = ?", (a["id"],))
    found = candidates(build_parser(), ["show", "--db", str(db_path), ""])
    assert found == [(str(a["id"]), "Sourdough starter"), (str(b["id"]), "Garden plan")]
    assert candidates(build_parser(), ["link", "--db", str(db_path), str(a["id"]), str(b["id"])]) == [
        (str(b["id"]), "Garden plan")]  # the second id, by prefix
    assert candidates(build_parser(), ["show", "--db", str(tmp_path / "none.db"), ""]) == []  # no database yet
    assert candidates(build_parser(), ["show", "--db", str(db_path), "x"]) == []  # not a number


def test_bash_completes_verbs_and_ids_with_titles(store, db_path, cli_env):
    store.add_node("Sourdough starter", "")
    env = dict(cli_env, PATH=f"{BIN}{os.pathsep}{cli_env.get('PATH', '')}")
    env["CAIRN_HOME"] = str(db_path.parent)  # the default database is this test's
    script = (
        'source <(cairn completion bash)\n'
        'COMP_WORDS=(cairn sho); COMP_CWORD=1; _cairn; echo "verb:${COMPREPLY[*]}"\n'
        'COMP_WORDS=(cairn show ""); COMP_CWORD=2; _cairn; echo "id:${COMPREPLY[*]}"\n'
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "verb:show" in done.stdout
    assert "id:1" in done.stdout  # one node: its id alone, ready to insert


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_the_zsh_and_fish_scripts_parse(shell, cairn_cmd, cli_env):
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here; its script is checked where it is")
    script = subprocess.run([*cairn_cmd, "completion", shell], capture_output=True, text=True, env=cli_env, timeout=60)
    assert script.returncode == 0
    checked = subprocess.run([shell, "-n"], input=script.stdout, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr


def test_each_script_calls_back_the_hidden_verb(cairn_cmd, cli_env):
    for shell in ("bash", "zsh", "fish"):
        out = subprocess.run([*cairn_cmd, "completion", shell], capture_output=True, text=True, env=cli_env, timeout=60)
        assert out.returncode == 0 and "cairn __complete --" in out.stdout


def test_node_ids_are_offered_for_history_and_merge_but_not_for_a_change_number(store, db_path):
    from tui.cli.completion import candidates
    from tui.cli.main import build_parser

    node = store.add_node("Alpha", "text")["id"]
    parser = build_parser()
    assert (str(node), "Alpha") in candidates(parser, ["history", "--db", str(db_path), ""])
    assert (str(node), "Alpha") in candidates(parser, ["merge", "--db", str(db_path), str(node), ""])
    assert candidates(parser, ["revert", "--db", str(db_path), str(node), "--to", ""]) == []
