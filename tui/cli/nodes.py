"""`cairn add show edit rm restore trash link unlink`: one node or edge at a time."""

from __future__ import annotations

from typing import Any

from core.errors import CairnError, InvalidInput
from core.graph import provenance
from core.graph.store import NO_EXPLANATION
from tui.cli.capture import add_url
from tui.cli.common import Out, Verbs, confirm, edited_in_editor, event_date_arg, id_arg, open_store, text_arg


def cmd_add(args, out: Out) -> int:
    from core.graph.store import title_from_text

    if args.edit:
        from tui.cli.add_edit import add_in_editor

        return add_in_editor(args, out)
    if args.url:
        return add_url(args, out)
    from tui.cli.capture_files import add_file, names_a_file

    if args.text and args.text != "-" and names_a_file(args.text):  # a text naming an existing file is that file
        if args.again:
            raise InvalidInput("--again is for --url; a file is captured again when its content changes "
                               "(`cairn add FILE` says when it is unchanged).")
        return add_file(args, out)
    if args.again:
        raise InvalidInput("--again goes with --url (capture a web address again).")
    text = text_arg(args.text) or ""
    if not text.strip() and not args.title:
        raise InvalidInput("Nothing to add: give the note's text, `-` to read it from stdin, or --title.")
    title = args.title or title_from_text(text)
    with open_store(args) as store:
        node = store.add_node(
            title, text, description=args.description or "", link=args.link, event_date=args.event_date,
            dimensions=args.dimension or [], type=args.type,
        )
    if out.as_json:
        out.json(node)
    else:
        print(node["id"])
    return 0


def cmd_today(args, out: Out) -> int:
    """Append a timestamped entry to today's journal note, or show the note."""
    from core.graph import journal

    with open_store(args) as store:
        if args.text is None:
            node = journal.find(store, journal.local_now().date())
            if node is None:
                if out.as_json:
                    out.json(None)
                else:
                    out.text("Nothing in today's journal yet: `cairn today TEXT` adds an entry.")
                return 0
            created = False
        else:
            text = text_arg(args.text) or ""
            node, created = journal.append(store, text)
            before = [e for e in store.edges(node["id"], "out") if e["explanation"] == journal.EXPLANATION] if created else []
    if out.as_json:
        out.json(node)
    elif args.text is None:
        out.text((f"{node['title']}", "bold"), f"  (node {node['id']})")
        out.text(node["source"].rstrip("\n"))
    else:
        note = f"Added to {node['title']} (node {node['id']})"
        if created:
            note += " — a new note for today" + (f", linked to {before[0]['to_title']}" if before else "")
        out.text(note + ".")
    return 0


def cmd_show(args, out: Out) -> int:
    with open_store(args, readonly=True) as store:
        node = store.get_node(args.id)
        edges = store.edges(args.id)
        origin = store.origins([args.id]).get(args.id)
    if out.as_json:
        out.json({**node, "edges": edges})
        return 0
    out.text((f"[{node['id']}] ", "dim"), (node["title"], "bold"))
    meta = [f"{k}: {node[k]}" for k in ("link", "event_date") if node[k]]
    if node["dimensions"]:
        meta.append("dimensions: " + ", ".join(node["dimensions"]))
    meta.append(f"type: {node['type']}  status: {node['chunk_status']}  updated: {node['updated_at']}")
    if not provenance.trusted(origin):  # the text is quoted material to the model (core/chat/fence.py)
        meta.append(f"text from: {provenance.label(origin)}")
    for line in meta:
        out.text(line, style="dim")
    if node["description"]:
        out.text(node["description"], style="italic")
    if node["source"]:
        out.text("")
        out.text(node["source"])
    if edges:
        out.text("")
        for e in edges:
            # An edge imported without an explanation (RA-H OS) says so, dim, as the app's Focus does.
            why = (f"  {e['explanation']}", None) if (e["explanation"] or "").strip() else (f"  {NO_EXPLANATION}", "dim")
            if e["from_node_id"] == node["id"]:
                out.text(("→ ", "cyan"), (f"[{e['to_node_id']}] {e['to_title']}", "bold"), why,
                         (f"  (edge {e['id']})", "dim"))
            else:
                out.text(("← ", "magenta"), (f"[{e['from_node_id']}] {e['from_title']}", "bold"),
                         why, (f"  (edge {e['id']})", "dim"))
    return 0


def cmd_edit(args, out: Out) -> int:
    changes: dict[str, Any] = {}
    for field in ("title", "description", "link", "event_date", "type"):
        value = getattr(args, field)
        if value is not None:
            changes[field] = value
    if args.text is not None:
        changes["source"] = text_arg(args.text)
    with open_store(args) as store:
        node = store.get_node(args.id)
        if args.dimension is not None or args.add_dimension or args.remove_dimension:
            dims = list(args.dimension) if args.dimension is not None else list(node["dimensions"])
            dims += args.add_dimension or []
            drop = {d.lower() for d in args.remove_dimension or []}
            changes["dimensions"] = [d for d in dims if d.lower() not in drop]
        before = node
        if changes:
            node = store.update_node(args.id, **changes)
        else:
            with edited_in_editor(node["source"]) as text:
                now = store.get_node(args.id)  # as the app's $EDITOR does (tui/flows/external_editor.py)
                if (now["updated_at"], now["source"]) != (node["updated_at"], node["source"]):
                    raise CairnError(f"Node {args.id} changed while you were editing, so your text was not saved "
                                     "over it.")
                node = store.update_node(args.id, source=text)
    if out.as_json:
        out.json(node)
    elif _same_values(before, node):  # the store writes nothing when every value is the same
        out.text(f"Node {node['id']} is unchanged: ", (node["title"], "bold"))
    else:
        out.text(f"Updated node {node['id']}: ", (node["title"], "bold"),
                 (" (queued for indexing)" if node["chunk_status"] == "pending" else "", "dim"))
    return 0


def _same_values(before: dict, after: dict) -> bool:
    """No value changed (updated_at alone cannot say: two writes in one clock tick share it)."""
    return {k: v for k, v in before.items() if k != "updated_at"} == {k: v for k, v in after.items()
                                                                       if k != "updated_at"}


def cmd_rm(args, out: Out) -> int:
    with open_store(args) as store:
        node = store.get_node(args.id)
        confirm(args, f"Move node {node['id']} ({node['title']!r}) and its edges to the trash?")
        store.delete_node(args.id)
    if out.as_json:
        out.json(node)
    else:
        out.text(f"Moved node {node['id']} to the trash (cairn restore {node['id']} brings it back).")
    return 0


def cmd_restore(args, out: Out) -> int:
    with open_store(args) as store:
        node = store.restore_node(args.id)
    if out.as_json:
        out.json(node)
    else:
        out.text(f"Restored node {node['id']}: ", (node["title"], "bold"))
    return 0


def cmd_trash(args, out: Out) -> int:
    with open_store(args, readonly=True) as store:
        items = store.trash()
    if out.as_json:
        out.json(items)
    elif not items:
        out.text("The trash is empty.")
    else:
        for t in items:
            what = (f"merged into {t['merged_into']} (its links moved there), {t['deleted_at']}" if "merged_into" in t
                    else f"{t['edges']} edge{'s' if t['edges'] != 1 else ''}, deleted {t['deleted_at']}")
            out.text((f"[{t['node_id']}] ", "dim"), (t["title"], "bold"), (f"  {what}", "dim"))
    return 0


def cmd_link(args, out: Out) -> int:
    with open_store(args) as store:
        edge = store.add_edge(args.from_id, args.to_id, args.explanation)
    if out.as_json:
        out.json(edge)
    else:
        print(edge["id"])
    return 0


def cmd_unlink(args, out: Out) -> int:
    with open_store(args) as store:
        edge = store.get_edge(args.edge_id)
        confirm(args, f"Delete edge {edge['id']} ({edge['from_node_id']} → {edge['to_node_id']})?")
        store.delete_edge(args.edge_id)
    if out.as_json:
        out.json(edge)
    else:
        out.text(f"Deleted edge {edge['id']}.")
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("add", cmd_add, "add a note; prints its id")
    p.add_argument("text", nargs="?", help="the note's text, or - to read it from stdin; a path to an existing "
                   "file captures that file (.pdf page by page, .txt, .md)")
    p.add_argument("--title", "-t", help="the title (default: the first line of the text)")
    p.add_argument("--description", help="a one-line summary")
    p.add_argument("--link", metavar="URL", help="where the note comes from")
    p.add_argument("--dimension", "-d", action="append", metavar="D", help="a dimension (repeatable)")
    p.add_argument("--event-date", metavar="DATE", type=event_date_arg, help="the date the note is about: YYYY-MM-DD, YYYY-MM or YYYY")
    p.add_argument("--type", default="note", help="the node's type (default: note)")
    p.add_argument("--url", metavar="URL", help="capture a web page: its main text, title, author and date")
    p.add_argument("--again", action="store_true", help="with --url: capture even if a node already links to it")
    p.add_argument("--edit", action="store_true", help="write the note in $VISUAL / $EDITOR: a title (the "
                   "frontmatter's, else the first line), then the text; --title, -d and the like start it filled in")

    p = verbs.add("today", cmd_today, "add a timestamped entry to today's journal note (no text: show it)")
    p.add_argument("text", nargs="?", help="the entry, or - to read it from stdin")

    p = verbs.add("show", cmd_show, "show a node with its edges")
    p.add_argument("id", type=id_arg, help="the node's id")

    p = verbs.add("edit", cmd_edit, "change a node (no options: edit its text in $EDITOR)")
    p.add_argument("id", type=id_arg, help="the node's id")
    p.add_argument("--title", "-t", help="a new title")
    p.add_argument("--text", help="new text, or - to read it from stdin")
    p.add_argument("--description", help="a new one-line summary")
    p.add_argument("--link", metavar="URL", help="a new source link")
    p.add_argument("--event-date", metavar="DATE", type=event_date_arg, help="a new event date: YYYY-MM-DD, YYYY-MM or YYYY")
    p.add_argument("--type", help="a new node type")
    p.add_argument("--dimension", "-d", action="append", metavar="D", help="replace the dimensions (repeatable)")
    p.add_argument("--add-dimension", action="append", metavar="D", help="add a dimension (repeatable)")
    p.add_argument("--remove-dimension", action="append", metavar="D", help="remove a dimension (repeatable)")

    p = verbs.add("rm", cmd_rm, "move a node and its edges to the trash")
    p.add_argument("id", type=id_arg, help="the node's id")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")

    p = verbs.add("restore", cmd_restore, "bring a node back from the trash")
    p.add_argument("id", type=id_arg, help="the node's id")
    verbs.add("trash", cmd_trash, "list deleted nodes")

    p = verbs.add("link", cmd_link, "join two nodes with an explained edge; prints its id")
    p.add_argument("from_id", type=id_arg, metavar="FROM", help="the id of the node the edge starts from")
    p.add_argument("to_id", type=id_arg, metavar="TO", help="the id of the node it points to")
    p.add_argument("--explanation", "-e", required=True, help="why they connect, as a sentence")

    p = verbs.add("unlink", cmd_unlink, "delete an edge")
    p.add_argument("edge_id", type=id_arg, metavar="EDGE", help="the edge's id (cairn show lists them)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
