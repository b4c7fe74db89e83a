"""`cairn retired` lists the nodes distilled chats retired; `cairn unretire ID` brings one back.

Un-retiring is an undo, like `cairn restore`, so it asks nothing: the node gets back into retrieval
and the hubs, and its provenance log keeps both the retirement and the un-retirement (core.graph.retirement).
"""

from __future__ import annotations

from core.errors import InvalidInput
from tui.cli.common import Out, Verbs, id_arg, open_store


def cmd_retired(args, out: Out) -> int:
    from core.graph import retirement

    if args.limit is not None and args.limit < 1:
        raise InvalidInput(f"--limit must be at least 1 (got {args.limit}).")
    with open_store(args, readonly=True) as store:
        nodes = retirement.retired_nodes(store, args.limit)
    if out.as_json:
        out.json(nodes)
        return 0
    if not nodes:
        out.text("No node is retired.", style="dim")
        return 0
    for n in nodes:
        rec = n["retirement"]
        if rec is None:
            when = f"  retired by hand (no record of a chat) · updated {n['updated_at'][:16].replace('T', ' ')}"
        else:
            when = "  retired " + (str(rec.get("at") or "?")[:16].replace("T", " "))
            if rec.get("chat_id") is not None:
                when += f" · chat {rec['chat_id']}" + (f" “{rec['chat_title']}”" if rec.get("chat_title") else "")
                if rec.get("message_id") is not None:
                    when += f", message {rec['message_id']}"
        out.text((f"[{n['id']}] ", "dim"), (n["title"], "bold"), (when, "dim"))
        if rec is not None and rec.get("reason"):
            out.text("    superseded: ", rec["reason"])
    out.text("")
    out.text("Bring one back with: cairn unretire ID", style="dim")
    return 0


def cmd_unretire(args, out: Out) -> int:
    from core.graph import retirement

    with open_store(args, readonly=True) as store:
        node = retirement.restore(store, args.id, via="cli")
    if out.as_json:
        out.json(node)
        return 0
    was = node["metadata"]["provenance_log"][-1].get("was")  # the entry restore() just wrote
    out.text(f"Un-retired node {node['id']}: ", (node["title"], "bold"))
    kept = "the retirement and this undo" if was else "this undo"
    out.text(f"  It was {retirement.describe(was)}. The chat is offered it again (hubs, retrieval); "
             f"its provenance log keeps {kept}.", style="dim")
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("retired", cmd_retired, "list the nodes distilled chats retired: when, by which chat, why")
    p.add_argument("--limit", "-n", type=int, metavar="N", help="at most N, most recently retired first")
    p = verbs.add("unretire", cmd_unretire, "bring back a retired node (into retrieval and hubs again)")
    p.add_argument("id", type=id_arg, help="the node's id")
