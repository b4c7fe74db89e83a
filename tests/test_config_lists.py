"""`cairn config set` of a list setting takes a list: a TOML/JSON array (`["private"]`) or a,b. Text in
brackets that is no array is refused with one sentence; before, `'["private"]'` was stored as the one
dimension `["private"]`, so never_send protected nothing, silently."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from core import config as config_module


def _cairn(cmd, env, *args):
    return subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def _never_send(cmd, env) -> list[str]:
    rows = json.loads(_cairn(cmd, env, "config", "--json").stdout)
    return next(r["value"] for r in rows if r["key"] == "privacy.never_send")


@pytest.mark.parametrize("text,expected", [
    ('["private"]', ["private"]),
    ('["private", "health"]', ["private", "health"]),
    ("['private', 'health']", ["private", "health"]),  # TOML's literal strings
    ('[ "private" , ]', ["private"]),  # TOML allows a trailing comma
    ("[]", []),
    ("private, health", ["private", "health"]),
    ("private", ["private"]),
])
def test_config_set_takes_a_list(cairn_cmd, cli_env, text, expected):
    proc = _cairn(cairn_cmd, cli_env, "config", "set", "privacy.never_send", text)
    assert proc.returncode == 0, proc.stderr
    assert _never_send(cairn_cmd, cli_env) == expected
    assert config_module.load(Path(cli_env["CAIRN_HOME"]) / "config.toml").privacy.never_send == expected


@pytest.mark.parametrize("text,says", [
    ('["private"', "looks like a list but does not parse"),
    ("[private]", "looks like a list but does not parse"),
    ('["private", "health"] extra', "looks like a list but does not parse"),
    ("[1, 2]", "`privacy.never_send[0]` must be a string"),
])
def test_config_set_refuses_a_list_that_does_not_parse_and_changes_nothing(cairn_cmd, cli_env, text, says):
    assert _cairn(cairn_cmd, cli_env, "config", "set", "privacy.never_send", "work").returncode == 0
    path = Path(cli_env["CAIRN_HOME"]) / "config.toml"
    before = path.read_text()
    proc = _cairn(cairn_cmd, cli_env, "config", "set", "privacy.never_send", text)
    err = proc.stderr.strip()
    assert proc.returncode == 1 and "\n" not in err and err.startswith("cairn: "), err
    assert says in err and "Nothing was changed." in err, err
    assert path.read_text() == before and _never_send(cairn_cmd, cli_env) == ["work"]
