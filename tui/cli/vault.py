"""`cairn import export sync watch conflicts`: markdown folders (an Obsidian vault) and RA-H OS databases in and out,
and a bound folder kept in step both ways (core/vault/twoway.py)."""

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


def _holding_the_index(args, store):
    """An import that indexes what it brings holds the index lock from its start when the lock is free
    (core/index/run_lock.py): the app, seeing the notes arrive, follows this run instead of starting
    its own on them. Taken by another run, the import goes on and its indexing waits as before."""
    from contextlib import nullcontext

    from core.index.run_lock import try_held

    return nullcontext() if getattr(args, "no_index", False) else try_held(store.path)


def _index_after(args, out: Out, store, state: dict | None = None):
    """Index what an import left pending, unless --no-index; returns the IndexReport or None."""
    pending = store.counts()["pending"]
    if not pending:
        return None
    if getattr(args, "no_index", False):
        if not out.as_json and not (state or {}).get("told"):
            out.text(f"{plural(pending, 'node')} {'waits' if pending == 1 else 'wait'} for indexing (--no-index); run `cairn index`.", style="dim")
        if state is not None:
            state["told"] = True
        return None
    from core.index.indexer import Indexer

    from tui.cli.index_bar import IndexBar

    state = state if state is not None else {}
    if "indexer" not in state:
        state["indexer"] = Indexer(store)
    with IndexBar(out) as progress:
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
    if kind == "vault" and _is_bound(path):
        # A one-way import of the bound folder would replace edits made in Cairn with the files' versions;
        # a round both ways merges them (or keeps both as a conflict) instead.
        if not out.as_json:
            out.text(f"{path} is the folder Cairn keeps in step both ways ([vault] path): running `cairn sync`.",
                     style="dim")
        args.yes = False
        return cmd_sync(args, out)
    files = None  # the folder's PDFs and text files (tui/cli/capture_files.py)
    with open_store(args) as store, _holding_the_index(args, store):
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
                out.text(f"  Nodes: full text from the older chunk column {n['text_from_chunk']:,} (not `source`, which held "
                         f"less or only the summary: {n['text_longer_than_source']:,}, named under Warnings), content as the text "
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
    """Keep the database and a folder in step both ways until Ctrl-C: a round now, then one whenever
    the folder or the database changes (core/vault/watch.py, core/vault/twoway.py)."""
    from core import clock
    from core.graph.store import Store
    from core.vault.conflicts import open_conflicts
    from core.vault.watch import watch

    cfg = load_config(args)
    folder = bound_folder(args, cfg)
    with open_store(args) as store:
        state: dict = {}
        bar = LazyProgress(out, "Importing", "files")

        def ready(report) -> None:
            bar.__exit__(None, None, None)
            if out.as_json:
                out.json({"event": "ready", **report.as_dict()})
            else:
                _print_vault_report(out, report)
            _index_after(args, out, store, state)

        def each_round(report) -> None:
            if out.as_json:
                if not state.get("rounds"):
                    state["rounds"] = 1  # the first round's import went out as "ready"
                elif report.written or report.merged or report.conflicts or report.trashed or report.restored \
                        or report.created or report.held:
                    sys.stdout.write(json.dumps({"event": "round", **{k: v for k, v in report.as_dict().items()
                                                                       if k != "imported"}}, ensure_ascii=False) + "\n")
                    sys.stdout.flush()
                return
            _print_round(out, report, clock.now()[11:19])
            if report.would_create and not state.get("asked"):
                state["asked"] = True
                if args.yes or ask_to_create(out, Path(report.folder), report.would_create):
                    with Store(store.path) as other:  # agreed: the watcher's next round writes them (data_version)
                        other.set_meta(f"vault_new_notes:{report.folder}", clock.now())
                else:
                    out.text((f"{len(report.would_create)} notes made in Cairn have no file in the folder; "
                              "`cairn sync --yes` writes them.", "yellow"))
            if not state.get("rounds"):
                state["rounds"] = 1
                _print_open_conflicts(out, open_conflicts(store))
                out.text(f"Keeping {report.folder} and Cairn in step both ways (Ctrl-C stops).", style="bold")

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
            watch(store, folder, None, changed, on_ready=ready, on_error=error, progress=bar, two_way=True,
                  new_notes=cfg.vault.new_notes, on_round=each_round)
        except KeyboardInterrupt:
            if not out.as_json:
                out.text("Stopped watching.")
            return 0
        finally:
            bar.__exit__(None, None, None)
    return 0


def _is_bound(path: Path) -> bool:
    from core import config as config_module

    bound = config_module.load().vault.bound
    return bool(bound) and Path(bound).expanduser().resolve() == path.resolve()


def bound_folder(args, cfg) -> Path:
    """The folder a two-way verb works on: the one named, else the bound one (`[vault] path`, or the
    older `[vault] watch`, which means the same)."""
    folder = getattr(args, "path", None) or cfg.vault.bound
    if not folder:
        raise UsageError(f"Name the folder (cairn {args.verb} FOLDER), or bind one: cairn config set vault.path FOLDER.")
    return Path(folder).expanduser()


def ask_to_create(out: Out, folder: Path, titles: list[str]) -> bool:
    """The first two-way sync of a database holding notes made in Cairn: say what would be written into
    the folder and ask (on a terminal only; elsewhere `--yes` says it)."""
    if not titles or out.as_json or not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    shown = "\n".join(f"  {printable(t)}" for t in titles[:LIST_CAP])
    more = f"\n  … and {len(titles) - LIST_CAP} more" if len(titles) > LIST_CAP else ""
    sys.stderr.write(f"{len(titles)} notes made in Cairn have no file in {printable(str(folder))} yet:\n"
                     f"{shown}{more}\nWrite them into the folder (and every new note from now on)? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _print_round(out: Out, report, stamp: str = "", *, conflicts: bool = True) -> None:
    """What a two-way round did besides the import (written, merged, trashed, ...), a line each; its
    new conflicts too unless `conflicts` is False (the caller lists every open one)."""
    lead = [(f"{stamp} ", "dim")] if stamp else []
    for rel in report.written:
        out.text(*lead, "wrote ", (rel, "bold"), (" (changed in Cairn)", "dim"))
    for rel in report.merged:
        out.text(*lead, "merged ", (rel, "bold"), (" (changed on both sides, apart)", "dim"))
    for rel, moved in report.trashed:
        out.text(*lead, "trashed ", (rel, "bold"), (f" → {moved}", "dim"))
    for rel in report.restored:
        out.text(*lead, "restored ", (rel, "bold"), (" (back from .trash/)", "dim"))
    for rel, why in report.held:
        out.text(*lead, ("held ", "yellow"), (rel, "bold"), (f": {why}", "yellow"))
    for rel in report.created:
        out.text(*lead, "created ", (rel, "bold"), (" (a note made in Cairn)", "dim"))
    for rel, kept in report.conflicts if conflicts else ():
        out.text(*lead, ("conflict ", "yellow"), (rel, "bold"), ": both sides changed the same lines; the file's "
                 "version is kept, Cairn's is in ", (kept, "bold"))


def _print_open_conflicts(out: Out, conflicts) -> None:
    if not conflicts:
        return
    out.text((f"{plural(len(conflicts), 'sync conflict')} to resolve (cairn conflicts):", "yellow"))
    for c in conflicts:
        out.text(f"  {c.id}  ", (c.rel, "bold"), (f": Cairn's version is in {c.conflict_rel}", "dim"))


def cmd_sync(args, out: Out) -> int:
    """One round both ways between the database and a markdown folder (core/vault/twoway.py)."""
    from core.vault.conflicts import open_conflicts
    from core.vault.twoway import TwoWaySync

    cfg = load_config(args)
    folder = bound_folder(args, cfg)
    with open_store(args) as store:
        sync = TwoWaySync(store, folder)
        report = sync.round(create_new=True if args.yes else None, new_notes=cfg.vault.new_notes)
        if report.would_create and ask_to_create(out, sync.root, report.would_create):
            created = sync.round(create_new=True, new_notes=cfg.vault.new_notes)
            report.created, report.would_create = created.created, []
        conflicts = open_conflicts(store)
        state: dict = {}
        if report.imported is not None:
            _index_after(args, out, store, state)
    if out.as_json:
        out.json({**report.as_dict(), "open_conflicts": [c.as_dict() for c in conflicts]})
        return 1 if conflicts else 0
    _print_round(out, report, conflicts=False)
    if report.would_create:
        out.text((f"{len(report.would_create)} notes made in Cairn have no file in the folder yet; `cairn sync --yes` "
                  "writes them (and every new note from then on).", "yellow"))
    if report.imported is not None:
        _print_vault_report(out, report.imported)
    _print_open_conflicts(out, conflicts)
    return 1 if conflicts else 0


def cmd_conflicts(args, out: Out) -> int:
    """List the sync conflicts, show one (both versions, as a diff), or keep one version."""
    from core.vault import conflicts as vault_conflicts

    action, rest = args.action, args.rest
    with open_store(args) as store:
        if action == "list":
            found = vault_conflicts.open_conflicts(store)
            if out.as_json:
                out.json({"conflicts": [c.as_dict() for c in found]})
            elif not found:
                out.text("No sync conflict to resolve.")
            else:
                _print_open_conflicts(out, found)
                out.text("Compare: cairn conflicts show ID · keep one: cairn conflicts keep ID file|cairn", style="dim")
            return 0
        if not rest or not rest[0].isdigit():
            raise UsageError(f"cairn conflicts {action} ID{' file|cairn' if action == 'keep' else ''}: "
                             "the conflict's number (cairn conflicts lists them).")
        conflict_id = int(rest[0])
        if action == "show":
            both = vault_conflicts.versions(store, conflict_id)
            if out.as_json:
                out.json({**both.conflict.as_dict(), "file_text": both.file_text, "cairn_text": both.cairn_text})
                return 0
            c = both.conflict
            out.text((c.rel, "bold"), f" — the file's version (in the note now) against Cairn's ({c.conflict_rel}):")
            if both.file_text is None or both.cairn_text is None:
                gone = c.rel if both.file_text is None else c.conflict_rel
                out.text((f"{gone} is no longer in the folder.", "yellow"))
            for line in both.diff()[2:]:
                style = "green" if line.startswith("+") else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else ""
                out.text((printable(line), style) if style else printable(line))
            out.text("Lines with + are Cairn's, - the file's. Keep one: cairn conflicts keep "
                     f"{c.id} file|cairn", style="dim")
            return 0
        if len(rest) != 2 or rest[1] not in vault_conflicts.KEEP_CHOICES:
            raise UsageError("cairn conflicts keep ID file|cairn: which version to keep — the file's (in the note "
                             "now) or Cairn's (in the conflict file).")
        away = vault_conflicts.keep(store, conflict_id, rest[1])
    if out.as_json:
        out.json({"resolved": conflict_id, "kept": rest[1], "other_version": away})
    else:
        kept = "the file's version" if rest[1] == "file" else "Cairn's version"
        where = f"; the other is in {away}" if away else ""
        out.text(f"Kept {kept}{where}.")
    return 0


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
    p = verbs.add("watch", cmd_watch, "keep a markdown folder and Cairn in step both ways while it runs, as `cairn "
                  "sync` does once (Ctrl-C stops)")
    p.add_argument("path", metavar="FOLDER", nargs="?", type=path_arg,
                   help="the folder of .md notes (default: vault.path in the config)")
    p.add_argument("--no-index", action="store_true", help="do not chunk and embed changed notes")
    p.add_argument("--yes", "-y", action="store_true", help="write files for the notes made in Cairn without asking "
                   "(the first sync with a folder asks)")
    p = verbs.add("conflicts", cmd_conflicts, "the notes a sync kept both versions of: list (default), show ID "
                  "(the two versions, as a diff), keep ID file|cairn")
    p.add_argument("action", nargs="?", choices=("list", "show", "keep"), default="list", metavar="ACTION",
                   help="list (default), show ID, keep ID file|cairn")
    p.add_argument("rest", nargs="*", metavar="ARG", help="the conflict's number, then (keep) which version")
