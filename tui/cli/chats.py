"""`cairn chats`: the conversations, most recent first, with what each sent and cost in tokens and money
(the chat's summed usage priced for its provider and model, core.chat.cost)."""

from __future__ import annotations

from tui.cli.common import Out, Verbs, load_config, open_store, positive_int


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


def register(verbs: Verbs) -> None:
    p = verbs.add("chats", cmd_chats, "list conversations")
    p.add_argument("--limit", "-n", type=positive_int, default=30, metavar="N", help="at most N (default 30)")
