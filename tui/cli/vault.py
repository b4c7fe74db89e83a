"""`cairn import export watch`: markdown folders (an Obsidian vault) and RA-H OS databases in and out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core.errors import InvalidInput
from core.safe_text import printable
from tui.cli.common import LazyProgress, Out, UsageError, Verbs, load_config, open_store, path_arg, plural

LIST_CAP = 20  # lines of a list (skipped files, unresolved links) shown before "... and N more"
CAIRN_TABLES = {"meta", "nodes", "edges", "chunks", "nodes_fts", "trash"}


def is_cairn_database(path: Path) -> bool:
    """Another Cairn database (a backup, a copy): `cairn import` must not read it as RA-H OS (it failed
    with 'no such column: rowid'); the way to use it is --db."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.Error:
        return False  # not readable as SQLite: the RA-H importer says why
    return CAIRN_TABLES <= names


def _capped(out: Out, title: str, items: list, style: str = "yellow") -> None:
    if not items:
        return
    out.text(f"{title} ({len(items):,}):", style=style)
    for where, what in items[:LIST_CAP]:
        out.text(f"  {where}: {what}" if where else f"  {what}", style="dim")
    if len(items) > LIST_CAP:
        out.text(f"  … and {len(items) - LIST_CAP:,} more (--json lists them all)", style="dim")


def _print_vault_report(out: Out, r) -> None:
    moved = f", {len(r.renamed)} moved" if r.renamed else ""
    restored = f", {r.restored} restored from the trash" if r.restored else ""
    trashed = f", {len(r.trashed)} moved to the trash" if r.trashed else ""
    out.text(f"{plural(r.files, 'note')} in {r.folder}: ", (f"{r.created:,} created", "green"),
             f", {r.updated:,} updated, {r.unchanged:,} unchanged{moved}{restored}{trashed}, "
             f"{len(r.skipped):,} skipped ({r.seconds:.1f} s).")
    share = f" ({r.wikilinks_resolved / r.wikilinks:.1%})" if r.wikilinks else ""
    md = f", {r.md_links_resolved:,} of {r.md_links:,} markdown links" if r.md_links else ""
    out.text(f"Links: {r.wikilinks_resolved:,} of {r.wikilinks:,} wikilinks resolved{share}{md}; "
             f"{r.same_note_links:,} same-note links need no edge; {len(r.attachments):,} point at attachments. "
             f"Edges: {r.edges:,} ({r.edges_created:,} created, {r.edges_updated:,} updated, "
             f"{r.edges_removed:,} removed).", style="dim")
    _capped(out, "Skipped", r.skipped)
    _capped(out, "Warnings", r.warnings)
    _capped(out, "Unresolved links", r.unresolved)
    if r.missing:
        _capped(out, "Files gone (their nodes were kept; --prune moves them to the trash)",
                [("", m) for m in r.missing])


def _index_after(args, out: Out, store, state: dict | None = None):
    """Index what an import left pending, unless --no-index; returns the IndexReport or None."""
    pending = store.counts()["pending"]
    if not pending:
        return None
    if getattr(args, "no_index", False):
        if not out.as_json and not (state or {}).get("told"):
            out.text(f"{plural(pending, 'node')} wait for indexing (--no-index); run `cairn index`.", style="dim")
        if state is not None:
            state["told"] = True
        return None
    from core.index.indexer import Indexer

    state = state if state is not None else {}
    if "indexer" not in state:
        state["indexer"] = Indexer(store)
    with LazyProgress(out, "Indexing", "nodes") as progress:
        report = state["indexer"].run(progress=progress)
    if not out.as_json:
        out.text(f"Indexed {plural(report.indexed, 'node')} ({plural(report.chunks, 'chunk')}) in {report.seconds:.1f} s.", style="dim")
        if report.errors:
            out.text(f"{report.errors} nodes failed to index; `cairn doctor` lists them.", style="red")
    return report


def cmd_import(args, out: Out) -> int:
    """A folder → markdown vault import; an SQLite file → RA-H OS import. Then index (unless --no-index)."""
    path = Path(args.path).expanduser()
    if path.is_dir():
        kind = "vault"
    elif path.is_file():
        from core.vault.raha import is_sqlite_file

        if not (is_sqlite_file(path) or path.suffix.lower() in (".sqlite", ".sqlite3", ".db")):
            raise InvalidInput(f"{path} is neither a folder of markdown notes nor an RA-H OS database (.sqlite); "
                               "to capture one file (.pdf, .txt, .md), use `cairn add FILE`.")
        if is_cairn_database(path):
            raise InvalidInput(f"{path} is a Cairn database (a backup or a copy?), not an RA-H OS one; open it with "
                               f"`cairn --db {path}`; nothing was imported.")
        kind = "raha"
    else:
        raise InvalidInput(f"There is no folder or file at {path}.")
    files = None  # the folder's PDFs and text files (tui/cli/capture_files.py)
    with open_store(args) as store:
        if kind == "vault":
            from core.vault.sync import import_vault

            from tui.cli.capture_files import import_folder_files, print_folder_report

            with LazyProgress(out, "Importing", "files") as progress:
                report = import_vault(store, path, progress, prune=args.prune)
            # the folder's PDFs and .txt files, through core/capture/files.py (the markdown went above)
            files = import_folder_files(out, store, path)
        else:
            from core.vault.raha import import_raha

            with LazyProgress(out, "Importing", "nodes") as progress:
                report = import_raha(store, path, progress)
        if not out.as_json:
            if kind == "vault":
                if report.files or report.skipped or files is None:  # PDFs only: no "0 notes" line
                    _print_vault_report(out, report)
                if files:
                    print_folder_report(out, files)
            else:  # RA-H OS: what came in, was converted and was skipped, per kind (report.by_kind())
                k = report.by_kind()
                n, d, ev, e = k["nodes"], k["dimensions"], k["event_dates"], k["edges"]
                out.text(f"RA-H OS database {report.path}: {report.nodes:,} nodes: ", (f"{report.created:,} created", "green"),
                         f", {report.updated:,} updated, {report.unchanged:,} unchanged, {len(report.skipped):,} skipped"
                         f" ({report.seconds:.1f} s).")
                out.text(f"  Nodes: full text from the older chunk column {n['text_from_chunk']:,}, content as the text "
                         f"{n['text_from_content']:,}, summary as the description {n['description_from_content']:,}, "
                         f"summary kept in the text {n['summary_appended']:,}; type from metadata "
                         f"{n['type_from_metadata']:,}; memory {n['memory']:,} (never hubs).", style="dim")
                out.text(f"  Dimensions: {d['assigned']:,} assigned, from {d['from']} (read: metadata "
                         f"{d['read_from_metadata']:,}, tables {d['read_from_tables']:,}, migration snapshot "
                         f"{d['read_from_snapshot']:,}); {d['skipped']:,} left out.", style="dim")
                out.text(f"  Event dates: {ev['read']:,} ({ev['kept']:,} full dates, {ev['partial']:,} a year or month "
                         f"only, kept so, {ev['converted']:,} converted, {ev['from_metadata']:,} from "
                         f"metadata.published_date; {ev['unreadable']:,} not a date, kept in metadata.raha.event_date_raw).",
                         style="dim")
                out.text(f"  Edges in {e['table']}: {e['read']:,} read, {e['imported']:,} kept ({e['created']:,} created, "
                         f"{e['updated']:,} updated, {e['unchanged']:,} unchanged, {e['removed']:,} removed); skipped "
                         f"{e['skipped']:,} ({e['dangling']:,} dangling, {e['self']:,} self, {e['duplicate']:,} duplicate, "
                         f"{e['already_linked']:,} already linked in Cairn); {e['no_explanation']:,} without an explanation "
                         f"(shown as \"no explanation yet\"), {e['explanation_from_context']:,} explanations from "
                         "context.explanation.", style="dim")
                if report.private:
                    from core.vault.raha import PRIVATE_DIMENSION

                    kept = PRIVATE_DIMENSION in {d.lower() for d in load_config(args).privacy.never_send}
                    out.text(f"{plural(report.private, 'node')} private in RA-H got the dimension `{PRIVATE_DIMENSION}`"
                             + ("; privacy.never_send keeps them from remote providers." if kept else
                                "; add it to never_send in config.toml's [privacy] table to keep them from "
                                "remote providers."),
                             style="dim" if kept else "yellow")
                if report.gone:
                    out.text(f"{report.gone:,} nodes imported before are no longer in that database; they were kept.",
                             style="dim")
                _capped(out, "Skipped", report.skipped)
                _capped(out, "Warnings", report.warnings)
        index = _index_after(args, out, store)
    if out.as_json:
        out.json({"kind": kind, **report.as_dict(), "index": index.as_dict() if index else None,
                  **({"files": files.as_dict()} if files else {})})
    return 1 if index is not None and index.errors else 0


def cmd_export(args, out: Out) -> int:
    from core.vault.export import export

    with open_store(args, readonly=True) as store:
        with LazyProgress(out, "Exporting", "nodes") as progress:
            report = export(store, args.dir, progress, force=args.force)
    if out.as_json:
        out.json(report.as_dict())
    else:
        removed = f"; removed {report.removed:,} files of nodes since deleted" if report.removed else ""
        out.text(f"Exported {plural(report.written, 'node')} and {plural(report.edges, 'edge')} to {report.folder}{removed}.")
        _capped(out, "Not written", report.skipped)
    return 1 if report.skipped else 0


def cmd_watch(args, out: Out) -> int:
    """Import the folder, then keep the database in step with it until Ctrl-C."""
    from core import clock
    from core.vault.watch import watch

    folder = Path(args.path).expanduser()
    with open_store(args) as store:
        bar = LazyProgress(out, "Importing", "files")
        state: dict = {}

        def ready(report) -> None:
            bar.__exit__(None, None, None)
            if out.as_json:
                out.json({"event": "ready", **report.as_dict()})
            else:
                _print_vault_report(out, report)
            _index_after(args, out, store, state)
            if not out.as_json:
                out.text(f"Watching {report.folder} (Ctrl-C stops).", style="bold")

        def changed(report) -> None:
            if out.as_json:
                sys.stdout.write(json.dumps({"event": "change", **report.as_dict()}, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            else:
                stamp = clock.now()[11:19]
                moved = {new for _, new in report.renamed}
                for rel in report.changed:
                    if rel not in moved:
                        out.text((f"{stamp} ", "dim"), "added " if rel in report.added else "updated ", (rel, "bold"))
                for old, new in report.renamed:
                    out.text((f"{stamp} ", "dim"), "moved ", (old, "bold"), " → ", (new, "bold"))
                for rel in report.trashed:
                    out.text((f"{stamp} ", "dim"), "deleted ", (rel, "bold"), (" (node moved to the trash)", "dim"))
                for rel, why in report.skipped:
                    out.text((f"{stamp} ", "dim"), "skipped ", (rel, "bold"), (f": {why}", "yellow"))
                if report.edges_created or report.edges_removed or report.edges_updated:
                    out.text((f"{stamp} ", "dim"), (f"edges: +{report.edges_created} -{report.edges_removed} "
                                                   f"~{report.edges_updated}", "dim"))
            _index_after(args, out, store, state)

        def error(exc) -> None:
            print(f"cairn: {printable(str(exc))}", file=sys.stderr)

        try:
            watch(store, folder, None, changed, on_ready=ready, on_error=error, progress=bar)
        except KeyboardInterrupt:
            if not out.as_json:
                out.text("Stopped watching.")
            return 0
        finally:
            bar.__exit__(None, None, None)
    return 0


def cmd_sync(args, out: Out) -> int:
    """One round both ways between the database and a markdown folder (core/vault/twoway.py)."""
    from core.vault.twoway import TwoWaySync, open_conflicts

    cfg = load_config(args)
    folder = args.path
    if folder is None:
        folder = cfg.vault.path or cfg.vault.watch
        if not folder:
            raise UsageError("Name the folder (cairn sync FOLDER), or bind one: cairn config set vault.path FOLDER.")
    with open_store(args) as store:
        sync = TwoWaySync(store, Path(folder).expanduser())
        report = sync.round(create_new=True if args.yes else None, new_notes=cfg.vault.new_notes)
        if report.would_create and sys.stdin.isatty() and sys.stderr.isatty() and not out.as_json:
            # the first sync with this folder: say what would be written into it, and ask
            shown = "\n".join(f"  {printable(t)}" for t in report.would_create[:20])
            more = f"\n  … and {len(report.would_create) - 20} more" if len(report.would_create) > 20 else ""
            sys.stderr.write(f"{len(report.would_create)} notes made in Cairn have no file in {sync.root} yet:\n"
                             f"{shown}{more}\nWrite them into the folder (and every new note from now on)? [y/N] ")
            sys.stderr.flush()
            if sys.stdin.readline().strip().lower() in ("y", "yes"):
                created = sync.round(create_new=True, new_notes=cfg.vault.new_notes)
                report.created, report.would_create = created.created, []
        conflicts = open_conflicts(store)
        state: dict = {}
        if report.imported is not None:
            _index_after(args, out, store, state)
    if out.as_json:
        out.json({**report.as_dict(), "open_conflicts": conflicts})
        return 1 if conflicts else 0
    for rel in report.written:
        out.text("wrote ", (rel, "bold"), (" (changed in Cairn)", "dim"))
    for rel in report.merged:
        out.text("merged ", (rel, "bold"), (" (changed on both sides, apart)", "dim"))
    for rel, moved in report.trashed:
        out.text("trashed ", (rel, "bold"), (f" → {moved}", "dim"))
    for rel in report.restored:
        out.text("restored ", (rel, "bold"), (" (back from .trash/)", "dim"))
    for rel, why in report.held:
        out.text(("held ", "yellow"), (rel, "bold"), (f": {why}", "yellow"))
    for rel in report.created:
        out.text("created ", (rel, "bold"), (" (a note made in Cairn)", "dim"))
    if report.would_create:
        out.text((f"{len(report.would_create)} notes made in Cairn have no file in the folder yet; `cairn sync --yes` "
                  "writes them (and every new note from then on).", "yellow"))
    if report.imported is not None:
        _print_vault_report(out, report.imported)
    for c in conflicts:
        out.text(("conflict ", "yellow"), (c["rel"], "bold"), f": the file's version is kept; Cairn's is in ",
                 (c["conflict_rel"], "bold"))
    return 1 if conflicts else 0


def register(verbs: Verbs) -> None:
    p = verbs.add("import", cmd_import, "import a folder of markdown notes (Obsidian vault) or an RA-H OS .sqlite; "
                  "again: only changes")
    p.add_argument("path", metavar="PATH", type=path_arg, help="a folder of .md notes (its .pdf and .txt files are captured "
                   "too), or an RA-H OS database file")
    p.add_argument("--no-index", action="store_true", help="do not chunk and embed the imported notes now")
    p.add_argument("--prune", action="store_true",
                   help="move nodes whose file has left the folder to the trash (default: keep them)")
    p = verbs.add("export", cmd_export, "write every node as a markdown file (frontmatter + text + edges)")
    p.add_argument("dir", metavar="DIR", type=path_arg, help="an empty folder, or one an earlier export wrote")
    p.add_argument("--force", action="store_true", help="write into a folder that holds other files")
    p = verbs.add("sync", cmd_sync, "one round both ways with a markdown folder: edits made in Cairn go to their "
                  "files, the files' changes come in, edits on both sides merge (or are kept as a conflict file)")
    p.add_argument("path", metavar="FOLDER", nargs="?", type=path_arg,
                   help="the folder (default: vault.path in the config)")
    p.add_argument("--no-index", action="store_true", help="do not chunk and embed the notes that changed")
    p.add_argument("--yes", "-y", action="store_true", help="write files for the notes made in Cairn without asking "
                   "(the first sync with a folder asks)")
    p = verbs.add("watch", cmd_watch, "import a folder of markdown notes and keep the database in step with it "
                  "(Ctrl-C stops)")
    p.add_argument("path", metavar="PATH", type=path_arg, help="the folder of .md notes")
    p.add_argument("--no-index", action="store_true", help="do not chunk and embed changed notes")
