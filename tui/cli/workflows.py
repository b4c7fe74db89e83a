"""`cairn integrate ID` and `cairn links ID`: proposed edges from a node, numbered; `--accept 1,3` writes
the chosen ones.

integrate: related nodes from hybrid search, neighbours of neighbours and mentions (core.assist.integrate),
with explanations drafted by the configured model; offline (or without a key) there are no drafts, and
it says so once. links: the nodes the node's text mentions (core.assist.mentions), the sentence as the draft.

Listing writes no edge. It keeps the numbered list (in the database's meta table), so `--accept`
picks from exactly what was shown, not from a new search or model reply; without a kept list,
`--accept` works on a fresh one, printed before anything is written. Every accepted link needs an
explanation: its draft, or `--explanation N="..."`. Writing asks for confirmation at a terminal and
needs `--yes` elsewhere; all the accepted links are written in one transaction, or none.
"""

from __future__ import annotations

from core.chat.cost import SpendGuard
from core.graph import shown_lists
from core.errors import CairnError, InvalidInput
from tui.cli.common import (Out, Verbs, accept_numbers, add_provider_options, confirm, id_arg, load_config,
                            open_store, positive_int)

OFFLINE_NOTE = ("Explanations are not drafted without a model (the chat provider is offline): give each link you "
                "accept one with --explanation N=\"...\".")


def _explanations(values: list[str] | None) -> dict[int, str]:
    out: dict[int, str] = {}
    for value in values or []:
        number, sep, text = value.partition("=")
        if not sep or not number.strip().isdigit() or int(number) < 1:
            raise InvalidInput(f"--explanation takes N=\"text\" (N a number from the list), not {value!r}.")
        if not text.strip():
            raise InvalidInput(f"--explanation {number.strip()}= is empty; edges are explained, so say why they "
                               "connect.")
        out[int(number)] = " ".join(text.split())
    return out


def _pending_key(mode: str, node_id: int) -> str:
    return f"workflow_pending:{mode}:{int(node_id)}"


def _save(store, mode: str, node_id: int, proposals, warnings: list[str]) -> None:
    shown_lists.save(store, _pending_key(mode, node_id), [p.as_dict() for p in proposals], warnings,
                 owner=("node", node_id))


def _load(store, mode: str, node_id: int):
    from core.assist.integrate import Proposal

    kept = shown_lists.load(store, _pending_key(mode, node_id), owner=("node", node_id))  # OwnerDeleted: node gone
    if kept is None:
        return None
    proposals, warnings, at = kept
    return [Proposal(**p) for p in proposals], warnings, at


def _clear(store, mode: str, node_id: int) -> None:
    shown_lists.clear(store, _pending_key(mode, node_id))


def _find(args, store, mode: str):
    """(proposals, warnings) for the node, fresh."""
    from core.assist import integrate

    if mode == "links":
        return list(integrate.mention_proposals(store, args.id, limit=args.limit)), []
    from core.providers.factory import make_provider
    from core.search.searcher import Searcher

    cfg = load_config(args)
    warnings: list[str] = []
    provider = None
    try:
        provider = make_provider(cfg)
    except CairnError as exc:
        warnings.append(f"{exc} Showing the search proposals without drafted explanations.")
    if provider is not None and provider.name == "offline":
        provider = None
        warnings.append(OFFLINE_NOTE)
    found = integrate.propose(store, Searcher(store), args.id, limit=args.limit, provider=provider,
                              never_send=cfg.privacy.never_send, guard=SpendGuard(store, cfg))
    if found.warning:
        warnings.append(found.warning)
    return list(found), warnings


def _print(out, proposals, warnings: list[str], node: dict, mode: str) -> None:
    for warning in warnings:
        out.text(("note: " if warning == OFFLINE_NOTE else "warning: ", "yellow"), warning)
    if not proposals:
        out.text("No related nodes found to link." if mode == "integrate"
                 else "The text mentions no other node's title or alias.", style="dim")
        return
    out.text((f"[{node['id']}] ", "dim"), (node["title"], "bold"), " → ")
    for n, p in enumerate(proposals, 1):
        out.text((f"{n:>3}. ", "bold"), (f"[{p.target_id}] ", "dim"), (p.target_title, "bold"),
                 (f"  {p.confidence:.2f}", "cyan"))
        out.text("     ", (" · ".join(p.reasons), "dim"))
        if p.explanation:
            out.text("     ", (f"“{p.explanation}”", "italic"))
        else:
            out.text("     (no explanation drafted)", style="dim")


def _record(n: int, p) -> dict:
    return {"n": n, **p.as_dict()}


def run(args, out: Out, mode: str) -> int:
    from core.assist import integrate

    explanations = _explanations(args.explanation)
    if explanations and args.accept is None:
        raise InvalidInput("--explanation goes with --accept (it explains a link you accept).")
    with open_store(args) as store:
        # Before "there is no node N": a list kept for a node deleted since is named as such, and discarded.
        kept = _load(store, mode, args.id) if args.accept is not None else None
        node = store.get_node(args.id)
        if args.accept is None:
            proposals, warnings = _find(args, store, mode)
            _save(store, mode, args.id, proposals, warnings)
            if out.as_json:
                out.json({"node_id": node["id"], "proposals": [_record(n, p) for n, p in enumerate(proposals, 1)],
                          "warnings": warnings})
            else:
                _print(out, proposals, warnings, node, mode)
                if proposals:
                    pick = "1,2" if len(proposals) > 1 else "1"
                    out.text("")
                    out.text(f"Write some with: cairn {mode} {node['id']} --accept {pick} [--explanation 1=\"...\"] "
                             "(add --yes when not at a terminal)", style="dim")
            return 0

        numbers = accept_numbers(args.accept)
        if kept is not None:
            proposals, warnings, at = kept
            source = f"the list shown at {at[:16].replace('T', ' ')} UTC"
        else:
            proposals, warnings = _find(args, store, mode)
            source = "a fresh list"
            if not out.as_json:
                _print(out, proposals, warnings, node, mode)
        missing = [n for n in [*numbers, *explanations] if n > len(proposals)]
        if missing:
            raise InvalidInput(f"There is no proposal {missing[0]}: {source} has {len(proposals)}. Nothing was written.")
        stray = sorted(set(explanations) - set(numbers))
        if stray:
            raise InvalidInput(f"--explanation {stray[0]}=… is for a link you did not --accept. Nothing was written.")
        chosen = []
        for n in numbers:
            p = proposals[n - 1]
            if n in explanations:
                p.explanation = explanations[n]
            if not p.explanation.strip():
                raise InvalidInput(f"Proposal {n} (“{p.target_title}”) has no explanation; edges are explained: add "
                                   f"--explanation {n}=\"...\". Nothing was written.")
            chosen.append((n, p))
        if not out.as_json:
            out.text(f"From {source}:", style="dim")
            for n, p in chosen:
                out.text(f"{n:>3}. → ", (p.target_title, "bold"), f"  {p.explanation}")
        confirm(args, f"Write {len(chosen)} link{'s' if len(chosen) != 1 else ''} from “{node['title']}”?")
        edges = integrate.apply(store, args.id, [p for _, p in chosen])
        _clear(store, mode, args.id)
    if out.as_json:
        out.json({"node_id": node["id"], "written": edges})
    else:
        out.text(f"Linked “{node['title']}” to {len(edges)} node{'s' if len(edges) != 1 else ''}: "
                 + ", ".join(f"[{e['to_node_id']}] (edge {e['id']})" for e in edges), style="green")
    return 0


def cmd_integrate(args, out: Out) -> int:
    return run(args, out, "integrate")


def cmd_links(args, out: Out) -> int:
    return run(args, out, "links")


def _arguments(p, *, model: bool) -> None:
    """The options both verbs share; integrate also takes the drafting model."""
    p.add_argument("id", type=id_arg, metavar="ID", help="the node's id")
    p.add_argument("--accept", metavar="N,N", help="write these links (numbers from the list this command printed)")
    p.add_argument("--explanation", action="append", metavar='N="TEXT"',
                   help="the explanation of accepted link N (repeatable; default: its draft)")
    p.add_argument("--limit", "-n", type=positive_int, default=8 if model else 50, help="at most this many proposals")
    p.add_argument("--yes", "-y", action="store_true", help="write without asking")
    if model:
        add_provider_options(p, "drafts the explanations (default: chat.provider in the config)",
                             "the drafting model (default: chat.model, else the provider's default)")


def register(verbs: Verbs) -> None:
    p = verbs.add("integrate", cmd_integrate, "propose explained links from a node to related ones; --accept writes them")
    _arguments(p, model=True)
    p = verbs.add("links", cmd_links, "link the nodes a node's text mentions by title or alias; --accept writes them")
    _arguments(p, model=False)
