"""`cairn config`: each setting's effective value and its origin (key status only, never a key), or
`config set KEY VALUE`."""

from __future__ import annotations

import json
import sys

from core.errors import InvalidInput
from core.safe_text import printable
from tui.cli.common import Out, UsageError, Verbs


def cmd_config(args, out: Out) -> int:
    """Show each setting's effective value and where it comes from (an API key only as set or missing),
    or change one: `cairn config set chat.provider anthropic`."""
    from core import config as config_module

    if args.action == "show" and args.key is not None:
        raise UsageError(f"`cairn config show` takes no KEY (got {args.key!r}); to change one: cairn config set KEY VALUE.")
    if args.action == "set":
        if not args.key or args.value is None:
            raise UsageError("Usage: cairn config set KEY VALUE (e.g. chat.provider anthropic).")
        if args.key.startswith("keys."):
            raise InvalidInput("Put API keys in the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY), not on a command line.")
        path = config_module.set_value(args.key, args.value)  # reads the text as the setting's type; refuses unknown keys
        if not out.as_json:
            out.text(f"Set {args.key} in {path}")
    cfg = config_module.load()
    for warning in cfg.warnings:
        print(f"cairn: warning: {printable(warning)}", file=sys.stderr)
    rows = config_module.origins(cfg.path)
    if out.as_json:
        out.json([{"key": r.key, "value": r.value, "origin": r.origin} for r in rows])
    elif args.action != "set":
        out.text(f"config: {cfg.path}" + ("" if cfg.path.exists() else " (not created yet: defaults)"), style="dim")
        lines = []
        for row in rows:
            table, _, name = row.key.rpartition(".")
            value = row.value if table == "keys" else json.dumps(row.value, ensure_ascii=False)  # "set"/"missing"
            lines.append((table, f"{name} = {value}", row.origin))
        width = min(max(len(setting) for _, setting, _ in lines), 40)
        section = ""
        for table, setting, origin in lines:
            if table != section:
                out.text("")
                out.text(f"[{table}]", style="bold")
                section = table
            out.text(setting.ljust(width), (f"  # {origin}", "dim"))
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("config", cmd_config, "show each setting, its value and where it comes from, or `config set KEY VALUE`")
    p.add_argument("action", nargs="?", choices=["show", "set"], default="show", help="show (default) or set")
    p.add_argument("key", nargs="?", help="set: a setting such as chat.provider or privacy.never_send")
    p.add_argument("value", nargs="?", help='set: its value (true/false; a list as a,b,c or ["a", "b"])')
