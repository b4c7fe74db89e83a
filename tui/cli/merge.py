"""`cairn merge KEEP OTHER`: fold a duplicate into the node kept, after showing what will change."""

from __future__ import annotations

from contextlib import nullcontext

from tui.cli.common import Out, UsageError, Verbs, confirm, edited_in_editor, id_arg, open_store


def cmd_merge(args, out: Out) -> int:
    from core.graph import merge

    if args.edit and out.as_json and not args.yes:  # the plan alone would be printed, the edit thrown away
        raise UsageError("--edit with --json needs --yes: without it the plan is printed and nothing is written.")
    with open_store(args) as store:
        plan = merge.plan(store, args.keep, args.other)
        ends = {m.from_id for m in plan.edges} | {m.to_id for m in plan.edges}
        titles = {n["id"]: n["title"] for n in store.get_nodes(sorted(ends))}
        # An edit is kept in a file when the merge does not happen (a "no", a failure): edited_in_editor.
        with edited_in_editor(plan.source) if args.edit else nullcontext(plan.source) as source:
            node = _show_and_apply(args, out, store, plan, titles, source)
    if node is None:
        return 0
    if out.as_json:
        out.json({"plan": plan.as_dict(), "merged": node})
    else:
        out.text((f"Merged node {plan.other['id']} into node {node['id']}: ", "bold"), node["title"],
                 (f" (the other is in the trash; `cairn history {node['id']}` lists the merge, and "
                  "`cairn revert ID --undo N` on any of its changes takes it all back)", "dim"))
    return 0


def _show_and_apply(args, out: Out, store, plan, titles: dict, source: str) -> dict | None:
    """The plan shown, the user asked, the merge written: the kept node (None: --json without --yes)."""
    from core.graph import merge

    if not out.as_json:
        for line in plan.summary():
            out.text(line)
        for move in plan.edges:
            out.text(("  " + move.describe(plan.keep["id"], titles), "dim"))
        out.text(("The text after the merge" + (" (as you edited it)" if args.edit else "")
                  + " (--edit changes it first):", "bold"))
        out.text(source)
    elif not args.yes:
        out.json({"plan": plan.as_dict(), "merged": None})
        return None  # --json without --yes: the plan alone, nothing written
    confirm(args, f"Merge node {plan.other['id']} into node {plan.keep['id']}?")
    return merge.apply(store, plan, source=source)


def register(verbs: Verbs) -> None:
    p = verbs.add("merge", cmd_merge, "merge a duplicate node into the one kept (shows the result and asks first)")
    p.add_argument("keep", type=id_arg, metavar="KEEP", help="the id of the node to keep")
    p.add_argument("other", type=id_arg, metavar="OTHER", help="the id of the duplicate: its edges move to KEEP, "
                   "its title becomes an alias, it goes to the trash")
    p.add_argument("--edit", action="store_true", help="edit the combined text in $EDITOR before it is written")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation (with --json: write it)")
