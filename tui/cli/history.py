"""`cairn history revert`: what was changed, by whom and when; and taking changes back."""

from __future__ import annotations

from core.errors import InvalidInput, NotFound
from tui.cli.common import Out, Verbs, id_arg, open_store


def change_arg(text: str) -> int:
    """A change's number (`cairn history ID` lists them): a whole number, as an id is, but not a node's
    id, so the shell completion does not offer node ids for it."""
    return id_arg(text)


def _titles(store, changes) -> dict[int, str]:
    ids = {i for c in changes for i in (c.node_id, c.other_id) if i is not None}
    return {n["id"]: n["title"] for n in store.get_nodes(sorted(ids))}


def cmd_history(args, out: Out) -> int:
    from core.graph import history

    with open_store(args, readonly=True) as store:
        if args.diff is not None:
            change = history.change(store.db, args.diff)
            if not history.touches(change, args.id):
                raise InvalidInput(f"Change {args.diff} is not a change of node {args.id}.")
            titles = _titles(store, [change])
            if out.as_json:
                out.json(change.as_dict())
                return 0
            out.text((f"#{change.id} ", "bold"), f"{change.created_at}  ", (change.actor, "cyan"), "  ",
                     change.summary(titles, args.id))
            for line in history.diff(change):
                style = ("bold" if line.startswith(("---", "+++")) else "green" if line.startswith("+")
                         else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else None)
                out.text((line, style) if style else line)
            return 0
        changes = history.changes(store.db, args.id, limit=args.limit)
        titles = _titles(store, changes)
        if not changes and not store.get_nodes([args.id]):
            raise NotFound(f"There is no node {args.id}, and no change of a node {args.id} is recorded.")
    if out.as_json:
        out.json([c.as_dict() for c in changes])
        return 0
    if not changes:
        out.text(f"No changes of node {args.id} are recorded (the history starts with this version of Cairn, "
                 "and [history] keep_versions bounds it).")
        return 0
    out.text((f"Node {args.id} ", "bold"), (titles.get(args.id, "(in the trash)"), "bold"))
    for c in changes:
        out.text((f"  #{c.id:<6}", "bold"), (f"{c.created_at[:19].replace('T', ' ')}  ", "dim"),
                 (f"{c.actor}  ", "cyan"), c.summary(titles, args.id))
    out.text(("`cairn history ID --diff N` shows change N; `cairn revert ID --to N` brings the node back to "
              "how it was after it; `cairn revert ID --undo N` takes back change N alone.", "dim"))
    return 0


def cmd_revert(args, out: Out) -> int:
    from core.graph import history, revert

    if (args.to is None) == (args.undo is None):
        raise InvalidInput("Say which: --to N (the node as it was right after change N) or --undo N (take back "
                           "change N alone); `cairn history ID` lists the changes.")
    with open_store(args) as store:
        if args.undo is not None:
            change = history.change(store.db, args.undo)
            if not history.touches(change, args.id):
                raise InvalidInput(f"Change {args.undo} is not a change of node {args.id}; `cairn history "
                                   f"{args.id}` lists its changes.")
            undone = revert.undo(store, args.undo)
        else:
            undone = revert.revert_to(store, args.id, args.to)
        titles = _titles(store, undone)
        node = store.get_nodes([args.id])
    if out.as_json:
        out.json({"node": node[0] if node else None, "undone": [c.id for c in undone]})
        return 0
    if not undone:
        out.text(f"Node {args.id} is already as it was after change {args.to}; nothing changed.")
        return 0
    head = ((f"Undid change {args.undo}" + (f" with the {len(undone) - 1} other changes of its operation"
                                             if len(undone) > 1 else "")) if args.undo is not None
            else f"Reverted node {args.id} to change {args.to}: undid {len(undone)} change{'s' if len(undone) != 1 else ''}")
    out.text((head, "bold"), (" (itself a change: `cairn history " f"{args.id}` lists it, and it can be undone)", "dim"))
    for c in undone:
        out.text(f"  #{c.id:<6}", (f"{c.actor}: ", "cyan"), c.summary(titles, args.id))
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("history", cmd_history, "list the changes of a node (and its edges): what, who, when")
    p.add_argument("id", type=id_arg, help="the node's id")
    p.add_argument("--diff", type=change_arg, metavar="N", help="show change N line by line")
    p.add_argument("--limit", type=int, default=None, help="only the newest N changes")

    p = verbs.add("revert", cmd_revert, "bring a node back to an earlier version, or undo one change")
    p.add_argument("id", type=id_arg, help="the node's id")
    p.add_argument("--to", type=change_arg, metavar="N", help="the node as it was right after change N")
    p.add_argument("--undo", type=change_arg, metavar="N", help="take back change N alone (refused if what it "
                   "changed was changed again since)")
