"""Settings: created 0600, typed models shaped like the file, every unknown key refused with the nearest
known one, errors naming file and key, env beats file, each value's origin, a bad `set` changes nothing,
and `cairn config` never prints a key."""

import dataclasses
import json
import os
import re
import stat
import subprocess
import tomllib

import pytest

from core import config as config_module
from core.config import ConfigError


def test_config_file_is_created_private_and_validated(tmp_path):
    path = config_module.write_default(tmp_path / "config.toml")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config_module.set_value("chat.provider", "anthropic", path)
    assert config_module.load(path).chat.provider == "anthropic"
    assert "# offline | anthropic | openai" in path.read_text()  # comments survive tomlkit
    with pytest.raises(ConfigError, match=r"chat.provider.*Nothing was changed"):
        config_module.set_value("chat.provider", "bogus", path)
    assert config_module.load(path).chat.provider == "anthropic"
    assert not (tmp_path / "config.toml.tmp").exists()


def test_config_errors_name_the_file_and_the_key(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[chat]\nbackground_context = "yes"\n')
    with pytest.raises(ConfigError, match=r"config.toml.*chat.background_context.*true or false"):
        config_module.load(path)
    path.write_text("[chat\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config_module.load(path)


def test_environment_beats_the_file_and_readable_file_warns(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text('[keys]\nanthropic = "file-key-123"\n')
    os.chmod(path, 0o644)
    cfg = config_module.load(path)
    assert cfg.api_key("anthropic") == "file-key-123"
    assert any("readable by other users" in w for w in cfg.warnings)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key-456")
    assert cfg.api_key("anthropic") == "env-key-456"
    assert cfg.key_status("anthropic") == "set (from $ANTHROPIC_API_KEY)"


def test_cairn_config_shows_status_never_the_key(cairn_cmd, cli_env):
    env = dict(cli_env, ANTHROPIC_API_KEY="sk-ant-secret-789")
    proc = subprocess.run([*cairn_cmd, "config", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "sk-ant-secret-789" not in proc.stdout + proc.stderr
    rows = {row["key"]: row for row in json.loads(proc.stdout)}
    assert rows["keys.anthropic"] == {"key": "keys.anthropic", "value": "set", "origin": "environment ($ANTHROPIC_API_KEY)"}
    assert rows["chat.provider"] == {"key": "chat.provider", "value": "offline", "origin": "default"}
    proc = subprocess.run([*cairn_cmd, "config", "set", "chat.timeout", "60"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([*cairn_cmd, "config"], env=env, capture_output=True, text=True, timeout=60)
    lines = proc.stdout.splitlines()
    chat = lines.index("[chat]")
    assert re.fullmatch(r"timeout = 60\.0 +# file", lines[chat + 7]) and lines[chat - 1] == ""
    assert re.fullmatch(r"anthropic = set +# environment \(\$ANTHROPIC_API_KEY\)", lines[lines.index("[keys]") + 1])
    assert "sk-ant-secret-789" not in proc.stdout + proc.stderr
    proc = subprocess.run([*cairn_cmd, "config", "set", "keys.anthropic", "x"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "environment" in proc.stderr


def test_ui_animations_default_off_and_validated(tmp_path):
    path = config_module.write_default(tmp_path / "config.toml")
    assert config_module.load(path).ui.animations == "none"  # over SSH every frame crosses the wire
    config_module.set_value("ui.animations", "full", path)
    assert config_module.load(path).ui.animations == "full"
    with pytest.raises(ConfigError, match=r"ui.animations.*none, basic, full.*Nothing was changed"):
        config_module.set_value("ui.animations", "fancy", path)


def _refusal(tmp_path, body: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(body)
    os.chmod(path, 0o600)
    with pytest.raises(ConfigError) as err:
        config_module.load(path)
    assert str(path) in str(err.value)
    return str(err.value).replace(str(path), "config.toml")


def test_a_typo_in_privacy_is_refused_not_an_empty_never_send(tmp_path):
    said = _refusal(tmp_path, '[privacy]\nnever_sned = ["private"]\n')
    assert said == "config.toml: unknown setting `privacy.never_sned`; did you mean `never_send`?"


@pytest.mark.parametrize("body, says", [
    ("[chats]\nprovider = 'anthropic'\n", "unknown table `[chats]`; did you mean `[chat]`?"),
    ("[zzz]\n", "unknown table `[zzz]` (known at the top level: user_name, chat, agents, read_scope, tool_scope, capture, "
                "privacy, mcp, memory, history, ui, vault, keymap, keys)."),
    ("user_nme = 'Ada'\n", "unknown setting `user_nme`; did you mean `user_name`?"),
    ("colour = 'red'\n", "unknown setting `colour` (known at the top level: user_name,"),
    ("[mcp]\nallow_edit = true\n", "unknown setting `mcp.allow_edit`; did you mean `allow_edits`?"),
    ("[ui]\ncolour = 'red'\n", "unknown setting `ui.colour` (known in [ui]: theme, animations)."),
    ("[keys]\nantropic = 'k'\n", "unknown setting `keys.antropic`; did you mean `anthropic`?"),
])
def test_unknown_keys_and_tables_are_refused_in_every_section(tmp_path, body, says):
    assert says in _refusal(tmp_path, body)


@pytest.mark.parametrize("body, says", [
    ("user_name = 3\n", "`user_name` must be a string, not a whole number (3)."),
    ('[chat]\ntimeout = "60"\n', '`chat.timeout` must be a number, not a string ("60").'),
    ('[privacy]\nnever_send = "private"\n', '`privacy.never_send` must be a list of strings, not a string ("private").'),
    ("[privacy]\nnever_send = ['a', 2]\n", "`privacy.never_send[1]` must be a string, not a whole number (2)."),
    ('[mcp]\nallow_edits = "yes"\n', '`mcp.allow_edits` must be true or false, not a string ("yes").'),
    ("[memory]\nmax_count = 1.5\n", "`memory.max_count` must be a whole number, not a number (1.5)."),
    ("[ui]\nanimations = false\n", "`ui.animations` must be a string, not a boolean (false)."),
    ("[vault]\nwatch = ['a']\n", '`vault.watch` must be a string, not a list (["a"]).'),
    ("[keymap]\nquick_capture = 1\n", "`keymap.quick_capture` must be a string, not a whole number (1)."),
    ("[keys]\nopenai = true\n", "`keys.openai` must be a string, not a boolean (true)."),
    ("ui = 'nord'\n", "`ui` must be a table, not a string (\"nord\")."),
])
def test_a_wrong_type_names_the_key_the_type_and_the_value(tmp_path, body, says):
    assert says in _refusal(tmp_path, body)


def test_value_checks_and_whole_seconds(tmp_path):
    assert "`chat.provider` is 'bogus'; use one of offline, anthropic, openai" in _refusal(tmp_path, "[chat]\nprovider = 'bogus'\n")
    assert "`chat.timeout` must be between 1 and 3600 seconds" in _refusal(tmp_path, "[chat]\ntimeout = 0\n")
    assert "`chat.cache_ttl` is '2h'; use one of auto, 5m, 1h" in _refusal(tmp_path, "[chat]\ncache_ttl = '2h'\n")
    assert "0 or more (0 = no limit), not -1" in _refusal(tmp_path, "[memory]\nmax_age_days = -1\n")
    path = tmp_path / "config.toml"
    path.write_text("[chat]\ntimeout = 60\n")
    timeout = config_module.load(path).chat.timeout
    assert timeout == 60.0 and isinstance(timeout, float)


def _file_keys(model) -> list[str]:
    """Dotted keys of every setting a model holds, from its dataclass fields."""
    keys = []
    for f in dataclasses.fields(model):
        table = f.metadata.get("table")
        if table is None and "comment" in f.metadata:
            keys.append(f.name)
        elif table is not None and table is not dict:
            keys += [f"{f.name}.{g.name}" for g in dataclasses.fields(table)]
    return keys


def test_the_generated_template_loads_to_the_defaults_and_shows_every_setting(tmp_path):
    path = config_module.write_default(tmp_path / "config.toml")
    assert path.read_text() == config_module.template()
    assert config_module.load(path) == config_module.Config(path=path)
    keys = _file_keys(config_module.Config)
    assert {"user_name", "privacy.never_send", "mcp.allow_edits", "ui.theme", "vault.watch", "keys.openai"} <= set(keys)
    data = tomllib.loads(config_module.template())
    lines = config_module.template().splitlines()
    for key in keys:
        section, _, name = key.rpartition(".")
        assert name in (data[section] if section else data), key
        line = next(l for l in lines if re.match(rf"{name} = ", l))
        assert re.search(r" # \S", line), f"{key} has no comment in the template"
    for section in ("chat", "privacy", "mcp", "memory", "ui", "vault", "keymap", "keys"):
        assert re.search(rf"^\[{section}\] +# \S", config_module.template(), re.M), section
    assert lines[0].startswith("# Cairn settings. Environment variables")


def test_origins_say_default_file_or_environment_and_never_show_a_key(tmp_path, monkeypatch):
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "config.toml"
    path.write_text('[chat]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
                    '[keys]\nopenai = "sk-file-secret"\nanthropic = "sk-ant-file-secret"\n[keymap]\nquick_capture = "ctrl+k"\n')
    os.chmod(path, 0o600)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-secret")

    rows = {o.key: (o.value, o.origin) for o in config_module.origins(path)}
    assert set(_file_keys(config_module.Config)) <= set(rows)
    assert rows["chat.provider"] == ("openai", "file")
    assert rows["chat.agent"] == ("orchestrator", "default")
    assert rows["chat.model"] == ("gpt-4.1-mini", "default")
    assert rows["chat.base_url"] == ("http://127.0.0.1:9/v1", "file")
    assert rows["keymap.quick_capture"] == ("ctrl+k", "file")
    assert rows["keys.openai"] == ("set", "file")
    assert rows["keys.anthropic"] == ("set", "environment ($ANTHROPIC_API_KEY)")
    assert "secret" not in repr(config_module.origins(path))

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    path.write_text('[chat]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n')
    rows = {o.key: (o.value, o.origin) for o in config_module.origins(path)}
    assert rows["chat.base_url"] == ("http://127.0.0.1:8/v1", "environment ($OPENAI_BASE_URL)")
    assert rows["keys.anthropic"] == ("missing", "default")
    # issue 25 item 5: chat.provider is anthropic, but `cairn ask --provider openai` goes to $OPENAI_BASE_URL
    path.write_text('[chat]\nprovider = "anthropic"\n')
    rows = {o.key: (o.value, o.origin) for o in config_module.origins(path)}
    assert rows["chat.base_url"] == ("", "default; in use instead: $OPENAI_BASE_URL = http://127.0.0.1:8/v1 for openai")
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert {o.origin for o in config_module.origins(tmp_path / "absent.toml")} == {"default"}


def test_origins_tell_a_written_out_default_from_a_changed_value(tmp_path):
    """The generated template writes every default into the file: those say so, a changed value does not."""
    path = config_module.write_default(tmp_path / "config.toml")
    config_module.set_value("chat.timeout", "60", path)
    rows = {o.key: o.origin for o in config_module.origins(path)}
    assert rows["chat.timeout"] == "file"
    assert rows["chat.agent"] == rows["user_name"] == rows["privacy.never_send"] == "file (the default value)"


def test_config_set_refuses_an_unknown_key_and_creates_nothing(tmp_path):
    path = tmp_path / "config.toml"
    with pytest.raises(ConfigError, match=r"unknown setting `privacy.never_sned`; did you mean `never_send`\? "
                                          r"Nothing was changed\."):
        config_module.set_value("privacy.never_sned", ["private"], path)
    with pytest.raises(ConfigError, match=r"unknown table `\[chats\]`; did you mean `\[chat\]`"):
        config_module.set_value("chats.provider", "anthropic", path)
    with pytest.raises(ConfigError, match=r"`chat.a.b` is not a setting"):
        config_module.set_value("chat.a.b", "x", path)
    assert not path.exists()


def test_config_set_reads_command_line_text_as_the_settings_type(tmp_path):
    path = tmp_path / "config.toml"
    for key, text in (("chat.timeout", "60"), ("privacy.never_send", "private, health"), ("mcp.allow_edits", "true"),
                      ("memory.max_count", "500"), ("user_name", "true"), ("keymap.quick_capture", "ctrl+k")):
        config_module.set_value(key, text, path)
    cfg = config_module.load(path)
    assert (cfg.chat.timeout, cfg.privacy.never_send, cfg.mcp.allow_edits, cfg.memory.max_count, cfg.user_name,
            cfg.keymap) == (60.0, ["private", "health"], True, 500, "true", {"quick_capture": "ctrl+k"})
    with pytest.raises(ConfigError, match=r'`memory.max_count` must be a whole number, not a string \("many"\)'):
        config_module.set_value("memory.max_count", "many", path)


def test_settings_saved_together_land_together_or_not_at_all(tmp_path):
    """The Context viewer's Save writes four settings: one write, so a reader never sees half of them,
    and one bad value keeps the good ones out too."""
    path = tmp_path / "config.toml"
    config_module.set_values({"chat.provider": "anthropic", "chat.agent": "worker",
                              "chat.background_context": False}, path)
    cfg = config_module.load(path)
    assert (cfg.chat.provider, cfg.chat.agent, cfg.chat.background_context) == ("anthropic", "worker", False)
    before = path.read_text(encoding="utf-8")
    with pytest.raises(ConfigError, match=r"Nothing was changed\."):
        config_module.set_values({"chat.provider": "openai", "chat.timeout": "soon"}, path)
    assert path.read_text(encoding="utf-8") == before
    assert not path.with_name("config.toml.tmp").exists()
