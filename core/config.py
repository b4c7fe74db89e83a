"""Settings: `config.toml` read with tomllib, written with tomlkit (comments survive), validated
into a typed model whose errors name the file and the key. Environment variables beat the file.
The file is created 0600, and Cairn warns when others can read it (it may hold API keys)."""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import CairnError
from core.paths import config_path

PROVIDERS = ("offline", "anthropic", "openai")
KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1-mini", "offline": "offline"}

TEMPLATE = """\
# Cairn settings. Environment variables (ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENAI_BASE_URL) beat this file.
user_name = ""

[chat]
provider = "offline"     # offline | anthropic | openai (openai also covers Ollama, llama.cpp, LM Studio)
model = ""               # empty: the provider's default
base_url = ""            # an OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1
agent = "orchestrator"   # orchestrator | easy | worker | planner
background_context = true  # the top-10 hubs in the cached prefix (orchestrators only)
cache_ttl = "5m"         # "5m" or "1h" for the system part (Anthropic)
timeout = 120            # seconds a provider may stay silent (before or during a reply) before Cairn gives up
check_citations = "sent" # off | sent (flag [N]/[NODE:id] not in the context sent) | model (also ask the model)

[privacy]
never_send = []          # dimensions whose nodes never leave the machine, e.g. ["private"]

[mcp]
allow_edits = false

[memory]                 # retention of auto-written memory nodes (never your own notes); 0 = no limit
max_age_days = 0         # trash memory neither used nor edited in this many days
max_count = 0            # keep only the N most recently used memory nodes

[ui]
theme = ""               # a Textual theme name, e.g. "nord"; empty: Cairn's own
animations = "none"      # none | basic | full (over SSH every animation frame crosses the wire)

[vault]
watch = ""               # a folder of markdown notes the app keeps in sync while it runs (as `cairn watch`)

[keymap]                 # binding id = "key", e.g. quick_capture = "ctrl+k" (ids: press f1 in the app)
"""


ANIMATION_LEVELS = ("none", "basic", "full")
CITATION_CHECKS = ("off", "sent", "model")


class ConfigError(CairnError):
    pass


@dataclass
class ChatSettings:
    provider: str = "offline"
    model: str = ""
    base_url: str = ""
    agent: str = "orchestrator"
    background_context: bool = True
    cache_ttl: str = "5m"
    timeout: float = 120.0  # seconds without a byte from the provider; a stalled reply ends, partial kept
    check_citations: str = "sent"  # off | sent | model (see core/chat/citations.py)


@dataclass
class MemorySettings:
    """Retention of type='memory' nodes (core.graph.retention); 0 means no limit, both 0 means no policy."""

    max_age_days: int = 0
    max_count: int = 0


@dataclass
class Config:
    path: Path | None = None
    user_name: str = ""
    chat: ChatSettings = field(default_factory=ChatSettings)
    never_send: list[str] = field(default_factory=list)
    mcp_allow_edits: bool = False
    memory: MemorySettings = field(default_factory=MemorySettings)
    keys: dict[str, str] = field(default_factory=dict)  # from the file; env wins in api_key()
    keymap: dict[str, str] = field(default_factory=dict)  # binding id -> key(s), e.g. {"quick_capture": "ctrl+k"}
    theme: str = ""
    animations: str = "none"  # Textual's animation level: none | basic | full
    vault_watch: str = ""  # folder of markdown notes kept in sync while the app runs (core.vault.watch)
    warnings: list[str] = field(default_factory=list)

    def api_key(self, provider: str) -> str | None:
        env = KEY_ENV.get(provider)
        if env and os.environ.get(env):
            return os.environ[env]
        return self.keys.get(provider) or None

    def key_status(self, provider: str) -> str:
        """What the UI may show about a key: where it comes from, never the key."""
        env = KEY_ENV.get(provider)
        if env is None:
            return "not needed"
        if os.environ.get(env):
            return f"set (from ${env})"
        if self.keys.get(provider):
            return "set (from config file)"
        return f"missing (set ${env})"

    def base_url(self, provider: str) -> str | None:
        if provider == "openai":
            return os.environ.get("OPENAI_BASE_URL") or self.chat.base_url or None
        if provider == "anthropic":
            return os.environ.get("ANTHROPIC_BASE_URL") or (self.chat.base_url if self.chat.provider == "anthropic" else "") or None
        return None

    def model(self, provider: str | None = None) -> str:
        provider = provider or self.chat.provider
        if self.chat.model and provider == self.chat.provider:
            return self.chat.model
        return DEFAULT_MODELS[provider]


def _expect(where: str, key: str, value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise ConfigError(f"{where}: `{key}` must be {kind.__name__}, not {type(value).__name__} ({value!r}).")
    return value


def load(path: Path | None = None) -> Config:
    path = Path(path) if path else config_path()
    cfg = Config(path=path)
    if not path.exists():
        return cfg
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text.") from None
    mode = path.stat().st_mode
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        cfg.warnings.append(f"{path} is readable by other users; run: chmod 600 {path}")
    where = str(path)
    cfg.user_name = _expect(where, "user_name", data.get("user_name", ""), str)
    chat = data.get("chat", {})
    _expect(where, "chat", chat, dict)
    known = set(ChatSettings.__dataclass_fields__)
    for key, value in chat.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown setting `chat.{key}` (known: {', '.join(sorted(known))}).")
        default = getattr(ChatSettings(), key)
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # `timeout = 60` is as good as 60.0
        setattr(cfg.chat, key, _expect(where, f"chat.{key}", value, type(default)))
    if cfg.chat.provider not in PROVIDERS:
        raise ConfigError(f"{where}: `chat.provider` is {cfg.chat.provider!r}; use one of {', '.join(PROVIDERS)}.")
    if not 1 <= cfg.chat.timeout <= 3600:
        raise ConfigError(f"{where}: `chat.timeout` must be between 1 and 3600 seconds.")
    if cfg.chat.cache_ttl not in ("5m", "1h"):
        raise ConfigError(f"{where}: `chat.cache_ttl` must be \"5m\" or \"1h\".")
    if cfg.chat.check_citations not in CITATION_CHECKS:
        raise ConfigError(f"{where}: `chat.check_citations` is {cfg.chat.check_citations!r}; use one of "
                          f"{', '.join(CITATION_CHECKS)}.")
    privacy = _expect(where, "privacy", data.get("privacy", {}), dict)
    never = _expect(where, "privacy.never_send", privacy.get("never_send", []), list)
    cfg.never_send = [_expect(where, "privacy.never_send[]", d, str) for d in never]
    mcp = _expect(where, "mcp", data.get("mcp", {}), dict)
    cfg.mcp_allow_edits = _expect(where, "mcp.allow_edits", mcp.get("allow_edits", False), bool)
    memory = _expect(where, "memory", data.get("memory", {}), dict)
    for key, value in memory.items():
        if key not in MemorySettings.__dataclass_fields__:
            raise ConfigError(f"{where}: unknown setting `memory.{key}` (known: max_age_days, max_count).")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where}: `memory.{key}` must be a whole number, 0 or more (0 = no limit), "
                              f"not {value!r}.")
        setattr(cfg.memory, key, value)
    keymap = _expect(where, "keymap", data.get("keymap", {}), dict)
    cfg.keymap = {k: _expect(where, f"keymap.{k}", v, str) for k, v in keymap.items()}
    ui = _expect(where, "ui", data.get("ui", {}), dict)
    cfg.theme = _expect(where, "ui.theme", ui.get("theme", ""), str)
    cfg.animations = _expect(where, "ui.animations", ui.get("animations", "none"), str)
    if cfg.animations not in ANIMATION_LEVELS:
        raise ConfigError(f"{where}: `ui.animations` is {cfg.animations!r}; use one of {', '.join(ANIMATION_LEVELS)}.")
    vault = _expect(where, "vault", data.get("vault", {}), dict)
    for key in vault:
        if key != "watch":
            raise ConfigError(f"{where}: unknown setting `vault.{key}` (known: watch).")
    cfg.vault_watch = _expect(where, "vault.watch", vault.get("watch", ""), str).strip()
    keys = _expect(where, "keys", data.get("keys", {}), dict)
    cfg.keys = {k: _expect(where, f"keys.{k}", v, str) for k, v in keys.items() if v}
    return cfg


def write_default(path: Path | None = None) -> Path:
    """Create the config file (0600) from the commented template if it does not exist."""
    path = Path(path) if path else config_path()
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(TEMPLATE)
    return path


def set_value(dotted: str, value: Any, path: Path | None = None) -> Path:
    """Change one setting in place with tomlkit, keeping the file's comments."""
    import tomlkit

    path = write_default(path)
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    parts = dotted.split(".")
    table = doc
    for part in parts[:-1]:
        if part not in table:
            table[part] = tomlkit.table()
        table = table[part]
    table[parts[-1]] = value
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(tomlkit.dumps(doc))
    try:
        load(tmp)  # validate before replacing: a bad value never reaches the real file
    except ConfigError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(str(exc).replace(str(tmp), str(path)) + " Nothing was changed.") from None
    os.replace(tmp, path)
    return path
