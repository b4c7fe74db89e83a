"""`cairn distil CHAT_ID`: the model proposes notes from a chat; `--accept 1,3` applies the chosen ones.

Proposing writes nothing to the graph: it prints the numbered proposals (updates with their diff) and
keeps them (core.assist.distil.save_pending), so `--accept` applies exactly what was shown rather than a new
model reply. Applying asks for confirmation at a terminal and needs `--yes` elsewhere.
"""

from __future__ import annotations

from core.chat.cost import SpendGuard
from core.errors import CairnError, InvalidInput
from tui.cli.common import (Out, Verbs, accept_numbers, add_provider_options, confirm, id_arg, load_config,
                            open_store)


def _print(out, result) -> None:
    for warning in result.warnings:
        out.text(("warning: ", "yellow"), warning)
    if not result.proposals:
        out.text("The model proposed nothing to keep from this chat.", style="dim")
        return
    heading = {"addition": "Additions (new nodes)", "update": "Updates (existing nodes)",
               "retirement": "Retirements (marked retired, not deleted)"}
    kind = None
    for n, p in enumerate(result.proposals, 1):
        if p.kind != kind:
            kind = p.kind
            out.text("")
            out.text(heading[kind], style="bold")
        if p.kind == "addition":
            out.text((f"{n:>3}. ", "bold"), ("+ ", "green"), (p.title, "bold"),
                     (f"  #{' #'.join(p.dimensions)}" if p.dimensions else "", "dim"))
            if p.description:
                out.text("     ", p.description)
            for line in p.source.splitlines()[:12]:
                out.text("     ", (line, "green"))
            if len(p.source.splitlines()) > 12:
                out.text(f"     … {len(p.source.splitlines()) - 12} more lines", style="dim")
        elif p.kind == "update":
            out.text((f"{n:>3}. ", "bold"), ("~ ", "yellow"), f"node {p.node_id} ", (p.title, "bold"),
                     (f" — {p.reason}" if p.reason else "", "dim"))
            for line in p.diff.splitlines():
                style = ("green" if line.startswith("+") and not line.startswith("+++") else
                         "red" if line.startswith("-") and not line.startswith("---") else "dim")
                out.text("     ", (line, style))
        else:
            out.text((f"{n:>3}. ", "bold"), ("× ", "red"), f"node {p.node_id} ", (p.title, "bold"))
            out.text("     superseded: ", p.reason)
        out.text((f"     from message {p.source_message_id}: ", "dim"), (f"“{p.excerpt}”", "italic"))
    out.text("")
    out.text(f"Apply some with: cairn distil {result.chat_id} --accept 1,3 (add --yes when not at a terminal)",
             style="dim")


def cmd_distil(args, out: Out) -> int:
    from core.assist import distil

    with open_store(args, readonly=True) as store:
        if args.accept is None:
            from core.providers.factory import make_provider

            cfg = load_config(args)
            provider = make_provider(cfg)
            result = distil.propose(store, args.chat_id, provider, never_send=cfg.privacy.never_send,
                                    guard=SpendGuard(store, cfg, args.chat_id))
            distil.save_pending(store, result)
            if out.as_json:
                out.json({"chat_id": result.chat_id,
                          "proposals": [{"n": n, **p.as_dict()} for n, p in enumerate(result.proposals, 1)],
                          "warnings": result.warnings, "usage": result.usage})
            else:
                _print(out, result)
                u = result.usage
                out.text(f"{provider.name}/{provider.model} · tokens in {u.get('input', 0):,} "
                         f"(cache read {u.get('cache_read', 0):,}) · out {u.get('output', 0):,}", style="dim")
            return 0

        numbers = accept_numbers(args.accept)
        result = distil.load_pending(store, args.chat_id)
        if result is None:
            raise CairnError(f"No proposals are waiting for chat {args.chat_id}: run `cairn distil {args.chat_id}` "
                             "first to see them, then --accept the numbers you want.")
        missing = [n for n in numbers if n > len(result.proposals)]
        if missing:
            raise InvalidInput(f"There is no proposal {missing[0]}: the last distil of chat {args.chat_id} proposed "
                               f"{len(result.proposals)}. Nothing was changed.")
        chosen = [result.proposals[n - 1] for n in numbers]
        if not out.as_json:
            for n, p in zip(numbers, chosen):
                target = p.title if p.kind == "addition" else f"node {p.node_id} ({p.title})"
                out.text(f"{n:>3}. {p.kind}: ", (target, "bold"))
        confirm(args, f"Apply {len(chosen)} proposal{'s' if len(chosen) != 1 else ''} to your notes?")
        applied = distil.apply(store, args.chat_id, chosen)
        distil.clear_pending(store, args.chat_id)
    if out.as_json:
        out.json({"chat_id": args.chat_id, "applied": applied.as_dict()})
    else:
        out.text(f"Applied: {applied.summary()}.", style="green")
        for label, ids in (("added", applied.created), ("updated", applied.updated), ("retired", applied.retired)):
            if ids:
                out.text(f"  {label}: " + ", ".join(f"#{i}" for i in ids), style="dim")
        if applied.retired:
            out.text("  Retired nodes keep their text and links, with the dimension 'retired' "
                     "(cairn list -d retired).", style="dim")
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("distil", cmd_distil, "propose notes from a chat (additions, updates, retirements); --accept applies")
    p.add_argument("chat_id", type=id_arg, metavar="CHAT_ID", help="the chat's id (cairn chats lists them)")
    add_provider_options(p, "this time only (default: chat.provider in the config)",
                         "this time only (default: chat.model, else the provider's default)")
    p.add_argument("--accept", metavar="N,N", help="apply these proposals of the last `cairn distil CHAT_ID`")
    p.add_argument("--yes", "-y", action="store_true", help="apply without asking")
