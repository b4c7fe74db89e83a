"""Settings: `config.toml` read with tomllib, written with tomlkit (comments survive), validated into
typed models shaped like the file (one per table). Each field holds its default and its comment, and
the commented template is generated from them. Any unknown key, wrong type or bad value is an error
naming the file and the key. Environment variables beat the file. The file is created 0600, and Cairn
warns when others can read it (it may hold API keys)."""

from __future__ import annotations

import difflib
import functools
import json
import os
import stat
import tomllib
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, get_type_hints

from core.errors import CairnError
from core.paths import config_path, private_folder

PROVIDERS = ("offline", "anthropic", "openai")
KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1-mini", "offline": "offline"}
# The cheaper sibling the "easy" agent runs on when no model is configured (core/agent/profiles.py).
CHEAP_MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4.1-nano", "offline": "offline"}
ANIMATION_LEVELS = ("none", "basic", "full")
CITATION_CHECKS = ("off", "sent", "model")
CACHE_TTLS = ("auto", "5m", "1h")


class ConfigError(CairnError):
    pass


# A value check returns what is wrong with a well-typed value, to follow "`table.key` ", or None.
Check = Callable[[Any], "str | None"]


def _one_of(choices: tuple[str, ...]) -> Check:
    return lambda value: None if value in choices else f"is {value!r}; use one of {', '.join(choices)}"


def _between(low: float, high: float, unit: str) -> Check:
    return lambda value: None if low <= value <= high else f"must be between {low} and {high} {unit}, not {value!r}"


def _zero_or_more(value: int) -> str | None:
    return None if value >= 0 else f"must be a whole number, 0 or more (0 = no limit), not {value!r}"


def setting(default: Any, comment: str, check: Check | None = None) -> Any:
    """A setting of a table: its default, the comment the template writes beside it, an optional value check."""
    meta = {"comment": comment, "check": check}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class ChatSettings:
    """the model Cairn talks to and how it asks"""

    provider: str = setting("offline", "offline | anthropic | openai (openai also covers Ollama, llama.cpp, LM Studio)",
                            _one_of(PROVIDERS))
    model: str = setting("", "empty: the provider's default")
    base_url: str = setting("", "an OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1")
    agent: str = setting("orchestrator", "orchestrator | easy | worker | planner")
    background_context: bool = setting(True, "the top-10 hubs in the cached prefix (orchestrators only)")
    cache_ttl: str = setting("auto", '"auto": Anthropic\'s cache lifetimes (5 min or 1 h, the history too) follow '
                                    'your pace between turns; "5m" or "1h" fix the system part\'s (history 5 min); '
                                    '"1h" also asks OpenAI to keep the prefix 24 hours where the model takes it',
                             _one_of(CACHE_TTLS))
    timeout: float = setting(120.0, "seconds a provider may stay silent (before or during a reply) before Cairn "
                                    "gives up", _between(1, 3600, "seconds"))
    check_citations: str = setting("sent", "off | sent (flag [N]/[NODE:id] not in the context sent) | model "
                                           "(also ask the model)", _one_of(CITATION_CHECKS))
    local_context_window: int = setting(0, "tokens of context a model on a local server holds (what Ollama, "
                                           "llama.cpp or LM Studio was started with); 0: 4,096, Ollama's default",
                                        _zero_or_more)
    # Not 0 by default: a turn is bounded (max_requests_per_turn), but a script or a loop of messages is
    # not, and $10 is more than a day of heavy use at the default model's prices (issue 22).
    max_usd_per_day: float = setting(10.0, "USD the chat's requests may cost in a UTC day (stored usage, priced by "
                                           "the model table); a request that would pass it is not sent (0 = no cap)",
                                     _between(0, 1_000_000, "USD"))
    max_usd_per_chat: float = setting(0.0, "USD one chat's requests may cost in all (its delegates and side requests "
                                           "included); a request that would pass it is not sent (0 = no cap)",
                                      _between(0, 1_000_000, "USD"))
    max_requests_per_turn: int = setting(40, "model requests one message of yours may cause in all (tool steps and "
                                             "every delegated agent's included); the turn stops there",
                                         _between(1, 10_000, "requests"))
    max_tool_calls_per_turn: int = setting(100, "tool calls one message of yours may cause in all (delegated agents' "
                                                "included); the turn stops there", _between(1, 10_000, "tool calls"))


@dataclass
class AgentSettings:
    """the model each built-in agent runs on (a model of chat.provider); empty: the agent's default"""

    orchestrator: str = setting("", "empty: chat.model (or the provider's default)")
    easy: str = setting("", "empty: the provider's cheaper model (" + ", ".join(
        f"{m} on {p}" for p, m in CHEAP_MODELS.items() if p != "offline") + "), or chat.model when that is set")
    worker: str = setting("", "empty: chat.model (or the provider's default)")
    planner: str = setting("", "empty: chat.model (or the provider's default)")


# Two lists per agent, never mixed (as Ontheia keeps `read_namespaces` and `tool_read_namespaces`):
# what is injected without being asked, and what the model may fetch with its tools.
def _scope_comment(reach: str) -> str:
    return f"dimensions {reach}; empty: all"


@dataclass
class ReadScopeSettings:
    """per agent, the dimensions retrieval may send unasked (hubs, passages); apart from [tool_scope]"""

    orchestrator: list[str] = setting([], _scope_comment("the orchestrator's retrieval reads"))
    easy: list[str] = setting([], _scope_comment("the easy agent's retrieval reads"))
    worker: list[str] = setting([], _scope_comment("the worker's retrieval reads"))
    planner: list[str] = setting([], _scope_comment("the planner's retrieval reads"))


@dataclass
class ToolScopeSettings:
    """per agent, the dimensions its read tools may reach (sqliteQuery is off under a scope)"""

    orchestrator: list[str] = setting([], _scope_comment("the orchestrator's tools reach"))
    easy: list[str] = setting([], _scope_comment("the easy agent's tools reach"))
    worker: list[str] = setting([], _scope_comment("the worker's tools reach"))
    planner: list[str] = setting([], _scope_comment("the planner's tools reach"))


@dataclass
class CaptureSettings:
    """web pages the model and MCP clients capture (captureUrl); yours (cairn add --url) are not limited"""

    local_addresses: bool = setting(False, "let them fetch from this machine and its local network (a prompt-injected "
                                           "model could read internal pages and cloud metadata)")


@dataclass
class PrivacySettings:
    """what never leaves the machine, by any path"""

    never_send: list[str] = setting([], 'dimensions whose nodes never leave the machine, e.g. ["private"]')


@dataclass
class McpSettings:
    """what MCP clients (other AI tools) may do"""

    allow_edits: bool = setting(False, "let MCP clients change or delete existing notes and edges (they may always add)")


@dataclass
class MemorySettings:
    """retention of auto-written memory nodes (never your own notes); 0 = no limit"""

    max_age_days: int = setting(0, "trash memory neither used nor edited in this many days", _zero_or_more)
    max_count: int = setting(0, "keep only the N most recently used memory nodes", _zero_or_more)


@dataclass
class HistorySettings:
    """the history of every write to a node or an edge (cairn history, the History view)"""

    keep_versions: int = setting(200, "changes kept per node, newest first (pruned when the app or the MCP server "
                                      "starts, and by cairn doctor); 0 = keep every change", _zero_or_more)


@dataclass
class UiSettings:
    """how the app looks"""

    theme: str = setting("", 'a Textual theme name, e.g. "nord"; empty: Cairn\'s own')
    animations: str = setting("none", "none | basic | full (over SSH every animation frame crosses the wire)",
                              _one_of(ANIMATION_LEVELS))


@dataclass
class VaultSettings:
    """markdown notes kept in step with the database"""

    path: str = setting("", "the markdown folder Cairn keeps in step both ways: the app and `cairn watch` keep "
                            "it so while they run, `cairn sync` runs one round")
    watch: str = setting("", "the older name of vault.path, meaning the same (vault.path wins when both are set)")
    new_notes: str = setting("", "the sub-folder of vault.path where the files of notes made in Cairn go; "
                                 "empty: the top of the folder")

    @property
    def bound(self) -> str:
        """The folder kept in step both ways ("" when none is)."""
        return self.path.strip() or self.watch.strip()


@dataclass
class KeySettings:
    """API keys; the environment ($ANTHROPIC_API_KEY, $OPENAI_API_KEY) wins over these"""

    anthropic: str = setting("", "better in $ANTHROPIC_API_KEY than in a file")
    openai: str = setting("", "better in $OPENAI_API_KEY than in a file")


def table(model: type) -> Any:
    """A table of the file, read into `model`."""
    return field(default_factory=model, metadata={"table": model})


@dataclass
class Config:
    """The whole file: `user_name`, then one field per table; `path` and `warnings` are not file keys."""

    path: Path | None = None
    user_name: str = setting("", 'what the model calls you; empty: "the user"')
    chat: ChatSettings = table(ChatSettings)
    agents: AgentSettings = table(AgentSettings)
    read_scope: ReadScopeSettings = table(ReadScopeSettings)
    tool_scope: ToolScopeSettings = table(ToolScopeSettings)
    capture: CaptureSettings = table(CaptureSettings)
    privacy: PrivacySettings = table(PrivacySettings)
    mcp: McpSettings = table(McpSettings)
    memory: MemorySettings = table(MemorySettings)
    history: HistorySettings = table(HistorySettings)
    ui: UiSettings = table(UiSettings)
    vault: VaultSettings = table(VaultSettings)
    # [keymap] has free keys: binding id -> key(s), e.g. {"quick_capture": "ctrl+k"}
    keymap: dict[str, str] = field(default_factory=dict, metadata={
        "table": dict, "comment": 'binding id = "key", e.g. quick_capture = "ctrl+k" (ids: press f1 in the app)'})
    keys: KeySettings = table(KeySettings)
    warnings: list[str] = field(default_factory=list)

    def api_key(self, provider: str) -> str | None:
        env = KEY_ENV.get(provider)
        if env and os.environ.get(env):
            return os.environ[env]
        return getattr(self.keys, provider, "") or None

    def key_status(self, provider: str) -> str:
        """What the UI may show about a key: where it comes from, never the key."""
        env = KEY_ENV.get(provider)
        if env is None:
            return "not needed"
        if os.environ.get(env):
            return f"set (from ${env})"
        if getattr(self.keys, provider):
            return "set (from config file)"
        return f"missing (set ${env})"

    def base_url(self, provider: str) -> str | None:
        if provider == "openai":
            return os.environ.get(BASE_URL_ENV["openai"]) or self.chat.base_url or None
        if provider == "anthropic":
            return (os.environ.get(BASE_URL_ENV["anthropic"])
                    or (self.chat.base_url if self.chat.provider == "anthropic" else "") or None)
        return None

    def model(self, provider: str | None = None) -> str:
        provider = provider or self.chat.provider
        if self.chat.model and provider == self.chat.provider:
            return self.chat.model
        return DEFAULT_MODELS[provider]


# --- the shape of the file, read off the models -------------------------------------------------

def _settings(model: type) -> dict[str, tuple[Any, Field]]:
    """name -> (type, field) of the file keys a model holds (Config: top-level settings and tables)."""
    hints = get_type_hints(model)
    return {f.name: (hints[f.name], f) for f in fields(model) if f.metadata}


_EXPECTED = {str: "a string", bool: "true or false", int: "a whole number", float: "a number",
             list[str]: "a list of strings", dict: "a table"}


def _toml(value: Any) -> str:
    """A value as TOML writes it (for the template and for messages)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON's string escapes are all valid in TOML
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def _noun(value: Any) -> str:
    kinds = ((bool, "a boolean"), (int, "a whole number"), (float, "a number"), (str, "a string"),
             (list, "a list"), (dict, "a table"))
    kind = next((word for cls, word in kinds if isinstance(value, cls)), "a date or time")
    return f"{kind} ({_toml(value)})" if kind != "a table" else kind


def _typed(where: str, dotted: str, value: Any, hint: Any) -> Any:
    """`value` as the setting's type, or a ConfigError naming the file, key, expected type and value."""
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # `timeout = 60` is as good as 60.0
    if hint == list[str]:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: `{dotted}` must be {_EXPECTED[hint]}, not {_noun(value)}.")
        return [_typed(where, f"{dotted}[{i}]", item, str) for i, item in enumerate(value)]
    if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
        raise ConfigError(f"{where}: `{dotted}` must be {_EXPECTED.get(hint, hint.__name__)}, not {_noun(value)}.")
    return value


def _unknown(where: str, section: str | None, key: str, known: list[str], *, is_table: bool = False) -> ConfigError:
    """An unknown key (or, at the top level, table), with the nearest known one or else all of them."""
    near = difflib.get_close_matches(key, known, n=1)
    if is_table:
        what, hint = f"table `[{key}]`", f"; did you mean `[{near[0]}]`?" if near else ""
    else:
        what, hint = f"setting `{section + '.' if section else ''}{key}`", f"; did you mean `{near[0]}`?" if near else ""
    if not near:
        hint = f" (known {'in [' + section + ']' if section else 'at the top level'}: {', '.join(known)})."
    return ConfigError(f"{where}: unknown {what}{hint}")


def _setting(where: str, section: str | None, key: str, value: Any, hint: Any, fld: Field) -> Any:
    dotted = f"{section}.{key}" if section else key
    value = _typed(where, dotted, value, hint)
    check = fld.metadata.get("check")
    problem = check(value) if check else None
    if problem:
        raise ConfigError(f"{where}: `{dotted}` {problem}.")
    return value


def _fill(cfg: Config, data: dict, where: str) -> None:
    top = _settings(Config)
    for name, value in data.items():
        if name not in top:
            raise _unknown(where, None, name, list(top), is_table=isinstance(value, dict))
        hint, fld = top[name]
        model = fld.metadata.get("table")
        if model is None:
            setattr(cfg, name, _setting(where, None, name, value, hint, fld))
            continue
        _typed(where, name, value, dict)
        if model is dict:  # free keys, each a string
            setattr(cfg, name, {k: _typed(where, f"{name}.{k}", v, str) for k, v in value.items()})
            continue
        known = _settings(model)
        target = getattr(cfg, name)
        for key, item in value.items():
            if key not in known:
                raise _unknown(where, name, key, list(known))
            setattr(target, key, _setting(where, name, key, item, *known[key]))


def _read(path: Path | None) -> tuple[Config, dict]:
    """The config and the raw table it was read from ({} when there is no file)."""
    path = Path(path) if path else config_path()
    cfg = Config(path=path)
    if not path.exists():
        return cfg, {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text.") from None
    if path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH):
        cfg.warnings.append(f"{path} is readable by other users; run: chmod 600 {path}")
    _fill(cfg, data, str(path))
    return cfg, data


def load(path: Path | None = None) -> Config:
    return _read(path)[0]


# --- where each value comes from ----------------------------------------------------------------

@dataclass(frozen=True)
class Origin:
    """One effective setting: its dotted key, the value Cairn uses, and where that value comes from."""

    key: str
    value: Any
    origin: str  # "default", "file", "file (the default value)" or "environment ($NAME)"


def origins(path: Path | None = None) -> list[Origin]:
    """Every setting in file order with its effective value and origin; an API key shows only
    "set" or "missing", never the key."""
    cfg, data = _read(path)
    rows = []
    for name, (_, fld) in _settings(Config).items():
        model = fld.metadata.get("table")
        if model is None:
            origin = "default" if name not in data else _written(data[name], getattr(Config(), name))
            rows.append(Origin(name, getattr(cfg, name), origin))
        elif model is dict:
            rows.extend(Origin(f"{name}.{k}", v, "file") for k, v in getattr(cfg, name).items())
        else:
            written, defaults = data.get(name, {}), model()
            for key in _settings(model):
                origin = "default" if key not in written else _written(written[key], getattr(defaults, key))
                rows.append(_origin(cfg, name, key, origin))
    return rows


def _written(value: Any, default: Any) -> str:
    """The origin of a value the file holds; the template writes every default out, so say which are."""
    return "file (the default value)" if value == default else "file"


def _origin(cfg: Config, section: str, key: str, origin: str) -> Origin:
    dotted = f"{section}.{key}"
    if section == "keys":
        env = KEY_ENV[key]
        if os.environ.get(env):
            return Origin(dotted, "set", f"environment (${env})")
        return Origin(dotted, "set" if getattr(cfg.keys, key) else "missing", origin)
    if dotted == "chat.base_url":
        env = BASE_URL_ENV.get(cfg.chat.provider)
        if env and os.environ.get(env):
            return Origin(dotted, os.environ[env], f"environment (${env})")
        # another provider's address in the environment is used whenever that provider is (cairn ask
        # --provider openai): say so, or the file's empty value hides where requests go
        others = [f"${name} = {os.environ[name]} for {provider}" for provider, name in BASE_URL_ENV.items()
                  if provider != cfg.chat.provider and os.environ.get(name)]
        if others:
            return Origin(dotted, cfg.chat.base_url, f"{origin}; in use instead: {'; '.join(others)}")
    if dotted == "chat.model":
        return Origin(dotted, cfg.model(), origin)  # empty in the file means the provider's default
    return Origin(dotted, getattr(getattr(cfg, section), key), origin)


# --- writing ------------------------------------------------------------------------------------

HEADER = (f"# Cairn settings. Environment variables ({', '.join([*KEY_ENV.values(), *BASE_URL_ENV.values()])}) "
          "beat this file.")


def _commented(text: str, comment: str) -> str:
    return f"{text:<24} # {comment}"


@functools.cache
def template() -> str:
    """The commented config file `write_default` writes, generated from the models' defaults (when
    first asked for: the app's startup does not need it)."""
    lines = [HEADER]
    for name, (_, fld) in _settings(Config).items():
        model = fld.metadata.get("table")
        if model is None:
            lines.append(_commented(f"{name} = {_toml(fld.default)}", fld.metadata["comment"]))
            continue
        lines += ["", _commented(f"[{name}]", fld.metadata["comment"] if model is dict else model.__doc__)]
        if model is not dict:
            defaults = model()
            lines += [_commented(f"{key} = {_toml(getattr(defaults, key))}", f.metadata["comment"])
                      for key, (_, f) in _settings(model).items()]
    return "\n".join(lines) + "\n"


def write_default(path: Path | None = None) -> Path:
    """Create the config file (0600) from the commented template if it does not exist."""
    path = Path(path) if path else config_path()
    if path.exists():
        return path
    private_folder(path.parent)  # with $CAIRN_HOME this is the database's folder too
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(template())
    return path


def _setting_type(where: str, dotted: str) -> Any:
    """The type of the setting `dotted` names, or a ConfigError when the file has no such setting."""
    parts = dotted.split(".")
    if len(parts) > 2 or not all(parts):
        raise ConfigError(f"{where}: `{dotted}` is not a setting: use KEY or TABLE.KEY, e.g. chat.provider.")
    top = _settings(Config)
    if parts[0] not in top:
        raise _unknown(where, None, parts[0], list(top), is_table=len(parts) == 2)
    hint, fld = top[parts[0]]
    model = fld.metadata.get("table")
    if len(parts) == 1:
        if model is not None:
            raise ConfigError(f"{where}: `{dotted}` is a table, not a setting: give TABLE.KEY, e.g. chat.provider.")
        return hint
    if model is None:
        raise ConfigError(f"{where}: `{parts[0]}` is a setting, not a table: give `{parts[0]}` alone.")
    if model is dict:
        return str
    known = _settings(model)
    if parts[1] not in known:
        raise _unknown(where, parts[0], parts[1], list(known))
    return known[parts[1]][0]


def _from_text(text: str, hint: Any, where: str = "", dotted: str = "") -> Any:
    """Text from a command line as the setting's type; text that does not parse stays text, so
    validation names the type it should have been. A list is a TOML or JSON array (`["a", "b"]`) or
    comma-separated (`a,b`); text in brackets that is no array is refused, never kept as one item."""
    if hint is bool and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if hint == list[str]:
        if text.strip().startswith("["):
            return _array(text, where, dotted)
        return [v.strip() for v in text.split(",") if v.strip()]
    for kind in (int, float):
        if hint is kind:
            try:
                return kind(text)
            except ValueError:
                return text
    return text


def _array(text: str, where: str, dotted: str) -> list:
    """`["a", "b"]` read as a TOML array (which takes JSON's arrays of strings too, and 'single quotes')."""
    try:
        return tomllib.loads(f"value = {text.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        pass
    raise ConfigError(f"{where}: `{dotted}` is {text!r}, which looks like a list but does not parse; write it as "
                      '["a", "b"] (quoted, comma-separated) or as a,b. Nothing was changed.')


def set_value(dotted: str, value: Any, path: Path | None = None) -> Path:
    """Change one setting in place with tomlkit, keeping the file's comments. Text is read as the
    setting's type ("true", "60", "a,b" for a list); an unknown key or bad value changes nothing."""
    return set_values({dotted: value}, path)


def set_values(values: dict[str, Any], path: Path | None = None) -> Path:
    """Change several settings in one write: the file holds all of them or none (a reader never sees
    half a save, and one bad value keeps every other one out too)."""
    import tomlkit

    path = Path(path) if path else config_path()
    typed: dict[str, Any] = {}
    for dotted, value in values.items():
        try:
            hint = _setting_type(str(path), dotted)  # before write_default: an unknown key creates no file
        except ConfigError as exc:
            raise ConfigError(f"{exc} Nothing was changed.") from None
        typed[dotted] = _from_text(value, hint, str(path), dotted) if isinstance(value, str) and hint is not str \
            else value
    path = write_default(path)
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    for dotted, value in typed.items():
        parts = dotted.split(".")
        target = doc
        for part in parts[:-1]:
            if part not in target:
                target[part] = tomlkit.table()
            target = target[part]
        target[parts[-1]] = value
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
