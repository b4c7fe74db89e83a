"""`cairn chats`: the conversations, most recent first, with what each sent and cost in tokens and money
(the chat's summed usage priced for its provider and model, core.chat.cost)."""

from __future__ import annotations

import sys

from core.errors import CairnError
from core.safe_text import printable
from tui.cli.common import Out, UsageError, Verbs, id_arg, load_config, open_store, positive_int


def cmd_chats(args, out: Out) -> int:
    from core.chat.cost import Pricer
    from core.chat.repository import ChatRepository

    pricer = Pricer.from_config(load_config(args))
    with open_store(args, readonly=True) as store:
        chats = ChatRepository(store).list_chats(args.limit)
    for c in chats:  # one model per chat: the price of the sum is the sum of the prices
        c["cost"] = pricer.price(c["usage"], c["provider"], c["model"]).as_dict()
    if out.as_json:
        out.json(chats)
    elif not chats:
        out.text("No chats yet.", style="dim")
    else:
        for c in chats:
            u = c["usage"]
            out.text((f"[{c['id']}] ", "dim"), (c["title"] or "(untitled)", "bold"),
                     (f"  {c['agent']} · {c['provider']}/{c['model']} · {c['replies']} repl{'y' if c['replies'] == 1 else 'ies'} · "
                      f"in {u['input']} (cached {u['cache_read']}) out {u['output']} · {c['cost']['label']} · "
                      f"{c['updated_at'][:16]}", "dim"))
    return 0


ACTIONS = ("list", "search", "show", "rename", "rm", "restore", "trash", "export")


def cmd_chats_action(args, out: Out) -> int:
    """`cairn chats ACTION ...`: the list (no action), or one of ACTIONS."""
    action, rest = args.action, list(args.rest)
    if action == "list":
        if rest:
            raise UsageError(f"`cairn chats` takes no arguments (did you mean one of: {', '.join(ACTIONS[1:])}?).")
        return cmd_chats(args, out)
    needs = {"search": "QUERY", "show": "ID", "rename": "ID TITLE", "rm": "ID", "restore": "ID", "export": "ID",
             "trash": ""}[action]
    if len(rest) < len(needs.split()) or (action not in ("search", "rename") and len(rest) > len(needs.split())):
        raise UsageError(f"usage: cairn chats {action} {needs}".rstrip())
    from core.chat import manage

    if action == "trash":
        with open_store(args, readonly=True) as store:
            items = manage.trash(store)
        if out.as_json:
            out.json(items)
        elif not items:
            out.text("No chats in the trash.")
        for c in [] if out.as_json else items:
            out.text((f"[{c['id']}] ", "dim"), (c["title"] or "(untitled)", "bold"),
                     (f"  {c['messages']} messages, deleted {c['deleted_at'][:16]}", "dim"))
        return 0
    if action == "search":
        with open_store(args, readonly=True) as store:
            hits = manage.search(store, " ".join(rest), limit=args.limit)
        if out.as_json:
            out.json([{**h, "snippet": h["snippet"].replace(manage.HIT_START, "").replace(manage.HIT_END, "")}
                      for h in hits])
            return 0
        if not hits:
            out.text("No chat matches.")
        for h in hits:
            out.text((f"[{h['chat_id']}] ", "dim"), (h["title"] or "(untitled)", "bold"),
                     (f"  {h['updated_at'][:16].replace('T', ' ')}", "dim"))
            if h["snippet"]:
                out.text("    ", *_highlighted(h["snippet"], manage), style=None)
        return 0
    chat_id = chat_id_arg(rest[0])
    if action == "show":
        with open_store(args, readonly=True) as store:
            text = manage.markdown(store, chat_id)
        # The transcript holds the model's replies: shown, never interpreted (core/safe_text.py).
        out.json({"chat_id": chat_id, "markdown": text}) if out.as_json else print(printable(text), end="")
        return 0
    if action == "export":
        with open_store(args) as store:
            if args.as_node:
                node, new = manage.export_node(store, chat_id)
                said = f"Saved chat {chat_id} as node {node['id']}: " if new else \
                    f"Brought node {node['id']} (chat {chat_id} saved before) up to date: "
                out.json(node) if out.as_json else out.text(said, (node["title"], "bold"))
                return 0
            text = manage.markdown(store, chat_id)
        if args.output:
            from pathlib import Path

            path = Path(args.output).expanduser()
            if path.exists() and not args.force:
                raise CairnError(f"{path} exists; pass --force to overwrite it.")
            path.write_text(text, encoding="utf-8")
            out.json({"chat_id": chat_id, "path": str(path)}) if out.as_json else out.text(f"Wrote {path}")
        else:  # exact into a pipe or a file; at a terminal, shown like `show`
            print(printable(text) if sys.stdout.isatty() else text, end="")
        return 0
    with open_store(args) as store:
        if action == "rename":
            chat = manage.rename(store, chat_id, " ".join(rest[1:]))
            said = f"Renamed chat {chat_id}: "
        elif action == "rm":
            chat = manage.delete(store, chat_id)
            said = f"Moved chat {chat_id} to the trash (cairn chats restore {chat_id} brings it back): "
        else:
            chat = manage.restore(store, chat_id)
            said = f"Restored chat {chat_id}: "
    if out.as_json:
        out.json({"id": chat["id"], "title": chat["title"]})
    else:
        out.text(said, (chat["title"] or "(untitled)", "bold"))
    return 0


def _highlighted(snippet: str, manage) -> list:
    """The snippet on one line, its matched words bold (the markers manage.search puts around them)."""
    flat = " ".join(snippet.split("\n"))
    pieces = flat.replace(manage.HIT_END, manage.HIT_START).split(manage.HIT_START)
    return [(piece, "bold yellow") if i % 2 else piece for i, piece in enumerate(pieces) if piece]


def chat_id_arg(text: str) -> int:
    try:
        return id_arg(text)
    except Exception:
        raise UsageError(f"{text!r} is not a chat id (a whole number; `cairn chats` lists them)") from None


def register(verbs: Verbs) -> None:
    p = verbs.add("chats", cmd_chats_action, "list conversations, or: search QUERY, show ID, rename ID TITLE, "
                  "rm ID, restore ID, trash, export ID")
    p.add_argument("action", nargs="?", choices=ACTIONS, default="list", metavar="ACTION",
                   help="list (default), search, show, rename, rm (to the trash), restore, trash, export")
    p.add_argument("rest", nargs="*", metavar="ARG", help="the chat's id, then a title (rename); or the query (search)")
    p.add_argument("--limit", "-n", type=positive_int, default=30, metavar="N", help="at most N (default 30)")
    p.add_argument("--as-node", action="store_true", help="export: save the chat as a node (dimension chat)")
    p.add_argument("--output", "-o", metavar="FILE", help="export: write the markdown to FILE (else stdout)")
    p.add_argument("--force", action="store_true", help="export: overwrite FILE")
