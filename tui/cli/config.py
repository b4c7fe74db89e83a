"""`cairn config`: show the settings (key status only, never a key), or `config set KEY VALUE`."""

from __future__ import annotations

import sys
from typing import Any

from core.errors import InvalidInput
from tui.cli.common import Out, UsageError, Verbs


def check_config_key(dotted: str) -> None:
    """Refuse a key the config never reads: the loader itself checks the keys of [chat], [memory],
    [vault], but an unknown table or top-level key (`chats.provider`, a typo) would be written and
    then ignored."""
    import tomlkit

    from core.config import TEMPLATE

    template = tomlkit.parse(TEMPLATE)
    parts = dotted.split(".")
    tables = sorted(k for k, v in template.items() if isinstance(v, dict))
    if any(not p for p in parts) or len(parts) > 2:
        raise InvalidInput(f"`{dotted}` is not a setting: use KEY or TABLE.KEY, e.g. chat.provider. Nothing was changed.")
    if len(parts) == 1:
        if parts[0] not in template or parts[0] in tables:
            known = ", ".join(k for k in template if k not in tables)
            raise InvalidInput(f"Unknown setting `{dotted}` (top-level settings: {known}; "
                               f"tables: {', '.join(tables)}). Nothing was changed.")
        return
    table, key = parts
    if table not in tables:
        raise InvalidInput(f"Unknown table `{table}` in `{dotted}` (known: {', '.join(tables)}). Nothing was changed.")
    known_keys = list(template[table])
    if known_keys and key not in known_keys:  # [keymap] starts empty: any binding id
        raise InvalidInput(f"Unknown setting `{dotted}` (known in [{table}]: {', '.join(known_keys)}). "
                           "Nothing was changed.")


def cmd_config(args, out: Out) -> int:
    """Show the settings (key status only, never a key), or change one: `cairn config set chat.provider anthropic`."""
    from core import config as config_module

    if args.action == "show" and args.key is not None:
        raise UsageError(f"`cairn config show` takes no KEY (got {args.key!r}); to change one: cairn config set KEY VALUE.")
    if args.action == "set":
        if not args.key or args.value is None:
            raise UsageError("Usage: cairn config set KEY VALUE (e.g. chat.provider anthropic).")
        if args.key.startswith("keys."):
            raise InvalidInput("Put API keys in the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY), not on a command line.")
        check_config_key(args.key)
        value: Any = args.value
        if value.lower() in ("true", "false"):
            value = value.lower() == "true"
        elif args.key == "privacy.never_send":
            value = [v.strip() for v in value.split(",") if v.strip()]
        path = config_module.set_value(args.key, value)
        if not out.as_json:
            out.text(f"Set {args.key} in {path}")
    cfg = config_module.load()
    for warning in cfg.warnings:
        print(f"cairn: warning: {warning}", file=sys.stderr)
    info = {"path": str(cfg.path), "exists": cfg.path.exists(), "user_name": cfg.user_name,
            "chat": dict(cfg.chat.__dict__), "model": cfg.model(), "never_send": cfg.privacy.never_send,
            "mcp_allow_edits": cfg.mcp.allow_edits,
            "keys": {p: cfg.key_status(p) for p in ("anthropic", "openai")}}
    if out.as_json:
        out.json(info)
    elif args.action != "set":
        out.text(f"config: {info['path']}" + ("" if info["exists"] else " (not created yet: defaults)"), style="dim")
        for k, v in info["chat"].items():
            out.text(f"chat.{k} = {v!r}")
        out.text(f"privacy.never_send = {info['never_send']!r}")
        for p, status in info["keys"].items():
            out.text(f"{p} key: {status}")
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("config", cmd_config, "show the settings, or `config set KEY VALUE`")
    p.add_argument("action", nargs="?", choices=["show", "set"], default="show", help="show (default) or set")
    p.add_argument("key", nargs="?", help="set: a setting such as chat.provider or privacy.never_send")
    p.add_argument("value", nargs="?", help="set: its value (true/false; never_send takes a,b,c)")
