"""`cairn chats`: the conversations, most recent first, with what each sent and cost in tokens."""

from __future__ import annotations

from tui.cli.common import Out, Verbs, open_store, positive_int


def cmd_chats(args, out: Out) -> int:
    from core.chat.repository import ChatRepository

    with open_store(args, readonly=True) as store:
        chats = ChatRepository(store).list_chats(args.limit)
    if out.as_json:
        out.json(chats)
    elif not chats:
        out.text("No chats yet.", style="dim")
    else:
        for c in chats:
            u = c["usage"]
            out.text((f"[{c['id']}] ", "dim"), (c["title"] or "(untitled)", "bold"),
                     (f"  {c['agent']} · {c['provider']}/{c['model']} · {c['replies']} repl{'y' if c['replies'] == 1 else 'ies'} · "
                      f"in {u['input']} (cached {u['cache_read']}) out {u['output']} · {c['updated_at'][:16]}", "dim"))
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("chats", cmd_chats, "list conversations")
    p.add_argument("--limit", "-n", type=positive_int, default=30, metavar="N", help="at most N (default 30)")
