"""Settings: created 0600, validated with errors naming file and key, env beats file, a bad `set`
changes nothing, and `cairn config` never prints a key."""

import os
import stat
import subprocess

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
    with pytest.raises(ConfigError, match=r"config.toml.*chat.background_context.*bool"):
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
    assert "set (from $ANTHROPIC_API_KEY)" in proc.stdout
    proc = subprocess.run([*cairn_cmd, "config", "set", "keys.anthropic", "x"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "environment" in proc.stderr


def test_ui_animations_default_off_and_validated(tmp_path):
    path = config_module.write_default(tmp_path / "config.toml")
    assert config_module.load(path).animations == "none"  # over SSH every frame crosses the wire
    config_module.set_value("ui.animations", "full", path)
    assert config_module.load(path).animations == "full"
    with pytest.raises(ConfigError, match=r"ui.animations.*none, basic, full.*Nothing was changed"):
        config_module.set_value("ui.animations", "fancy", path)
