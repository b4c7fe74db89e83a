"""The `cairn` command line: argparse verbs over `core`, Rich for people, `--json` for programs.

Textual is imported only when the app starts (bare `cairn`), and onnxruntime only by verbs that
embed, so `cairn add` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from core.errors import CairnError, InvalidInput
from tui.cli_checks import (UsageError, backup_target, check_config_key, is_cairn_database, path_arg,
                            positive_int)

MAX_STDIN_BYTES = 10_000_000


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cairn")
    except PackageNotFoundError:  # running from a checkout without install
        return "0+unknown"


class _VersionAction(argparse.Action):
    """--version, resolved only when asked (importlib.metadata costs ~35 ms at every start)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help="show the version"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"cairn {_version()}")
        parser.exit()


# -- output --------------------------------------------------------------------------------------
class Out:
    """Rich output on stdout; plain when piped or with NO_COLOR (Rich honours both)."""

    def __init__(self, as_json: bool):
        self.as_json = as_json
        self._console = None

    @property
    def console(self):
        if self._console is None:
            from rich.console import Console

            self._console = Console(highlight=False, soft_wrap=True)
        return self._console

    def json(self, value: Any) -> None:
        # json.dumps escapes only C0 controls; C1 controls (U+009B is CSI), DEL and bidi controls
        # would reach the terminal raw. They only occur inside strings, so \uXXXX keeps the data exact.
        text = json.dumps(value, ensure_ascii=False, indent=2)
        text = re.sub(r"[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]", lambda m: f"\\u{ord(m.group()):04x}", text)
        sys.stdout.write(text + "\n")

    def text(self, *parts, style: str | None = None) -> None:
        from rich.text import Text

        from core.safe_text import printable

        line = Text()
        for part in parts:
            if isinstance(part, tuple):
                line.append(printable(str(part[0])), style=part[1])
            else:
                line.append(printable(str(part)), style=style)
        self.console.print(line)


def _store(args, *, readonly: bool = False):
    from core.paths import db_path
    from core.graph.store import Store

    path = db_path(getattr(args, "db", None))
    if readonly and not path.exists():
        raise CairnError(f"No database at {path} yet; add a note first (cairn add \"...\").")
    return Store(path)


def _read_stdin() -> str:
    data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise InvalidInput(f"Standard input is larger than {MAX_STDIN_BYTES // 1_000_000} MB; nothing was saved.")
    return _decode(data, "Standard input")


def _decode(data: bytes, what: str) -> str:
    if b"\x00" in data:
        raise InvalidInput(f"{what} contains NUL bytes (binary data?); nothing was saved.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{what} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); nothing was saved."
        ) from None


def _text_arg(value: str | None) -> str | None:
    if value == "-":
        return _read_stdin()
    return value


def _confirm(args, question: str) -> None:
    if getattr(args, "yes", False):
        return
    if not sys.stdin.isatty():
        raise CairnError(f"{question} Pass --yes to confirm when not at a terminal.")
    try:
        answer = input(f"{question} [y/N] ").strip().lower()
    except EOFError:  # Ctrl-D at the prompt: a no, not an "unexpected error"
        print(file=sys.stderr)
        answer = ""
    if answer not in ("y", "yes"):
        raise CairnError("Cancelled; nothing was changed.")


# -- verbs ---------------------------------------------------------------------------------------
def cmd_add(args, out: Out) -> int:
    from core.graph.store import title_from_text

    text = _text_arg(args.text) or ""
    if not text.strip() and not args.title:
        raise InvalidInput("Nothing to add: give the note's text, `-` to read it from stdin, or --title.")
    title = args.title or title_from_text(text)
    with _store(args) as store:
        node = store.add_node(
            title, text, description=args.description or "", link=args.link, event_date=args.event_date,
            dimensions=args.dimension or [], type=args.type,
        )
    if out.as_json:
        out.json(node)
    else:
        print(node["id"])
    return 0


def cmd_show(args, out: Out) -> int:
    with _store(args, readonly=True) as store:
        node = store.get_node(args.id)
        edges = store.edges(args.id)
    if out.as_json:
        out.json({**node, "edges": edges})
        return 0
    out.text((f"[{node['id']}] ", "dim"), (node["title"], "bold"))
    meta = [f"{k}: {node[k]}" for k in ("link", "event_date") if node[k]]
    if node["dimensions"]:
        meta.append("dimensions: " + ", ".join(node["dimensions"]))
    meta.append(f"type: {node['type']}  status: {node['chunk_status']}  updated: {node['updated_at']}")
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
            if e["from_node_id"] == node["id"]:
                out.text(("→ ", "cyan"), (f"[{e['to_node_id']}] {e['to_title']}", "bold"), f"  {e['explanation']}",
                         (f"  (edge {e['id']})", "dim"))
            else:
                out.text(("← ", "magenta"), (f"[{e['from_node_id']}] {e['from_title']}", "bold"),
                         f"  {e['explanation']}", (f"  (edge {e['id']})", "dim"))
    return 0


def cmd_edit(args, out: Out) -> int:
    changes: dict[str, Any] = {}
    for field in ("title", "description", "link", "event_date", "type"):
        value = getattr(args, field)
        if value is not None:
            changes[field] = value
    if args.text is not None:
        changes["source"] = _text_arg(args.text)
    with _store(args) as store:
        node = store.get_node(args.id)
        if args.dimension is not None or args.add_dimension or args.remove_dimension:
            dims = list(args.dimension) if args.dimension is not None else list(node["dimensions"])
            dims += args.add_dimension or []
            drop = {d.lower() for d in args.remove_dimension or []}
            changes["dimensions"] = [d for d in dims if d.lower() not in drop]
        if not changes:
            changes["source"] = _edit_in_editor(node["source"])
        before = node
        node = store.update_node(args.id, **changes)
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


def _edit_in_editor(text: str) -> str:
    import shlex
    import subprocess
    import tempfile

    from core.paths import data_dir

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise InvalidInput("Nothing to change: pass --title/--text/... or set $EDITOR to edit the text.")
    folder = data_dir() / "tmp"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".md", dir=folder, delete=False, encoding="utf-8") as fh:
        fh.write(text)
        path = Path(fh.name)
    try:
        result = subprocess.run([*shlex.split(editor), str(path)])
        if result.returncode != 0:
            raise CairnError(f"The editor exited with status {result.returncode}; nothing was changed.")
        return _decode(path.read_bytes(), "The edited file")
    finally:
        path.unlink(missing_ok=True)


def cmd_rm(args, out: Out) -> int:
    with _store(args) as store:
        node = store.get_node(args.id)
        _confirm(args, f"Move node {node['id']} ({node['title']!r}) and its edges to the trash?")
        store.delete_node(args.id)
    if out.as_json:
        out.json(node)
    else:
        out.text(f"Moved node {node['id']} to the trash (cairn restore {node['id']} brings it back).")
    return 0


def cmd_restore(args, out: Out) -> int:
    with _store(args) as store:
        node = store.restore_node(args.id)
    if out.as_json:
        out.json(node)
    else:
        out.text(f"Restored node {node['id']}: ", (node["title"], "bold"))
    return 0


def cmd_trash(args, out: Out) -> int:
    with _store(args, readonly=True) as store:
        items = store.trash()
    if out.as_json:
        out.json(items)
    elif not items:
        out.text("The trash is empty.")
    else:
        for t in items:
            out.text((f"[{t['node_id']}] ", "dim"), (t["title"], "bold"), (f"  {t['edges']} edges, deleted {t['deleted_at']}", "dim"))
    return 0


def cmd_link(args, out: Out) -> int:
    with _store(args) as store:
        edge = store.add_edge(args.from_id, args.to_id, args.explanation)
    if out.as_json:
        out.json(edge)
    else:
        print(edge["id"])
    return 0


def cmd_unlink(args, out: Out) -> int:
    with _store(args) as store:
        edge = store.get_edge(args.edge_id)
        _confirm(args, f"Delete edge {edge['id']} ({edge['from_node_id']} → {edge['to_node_id']})?")
        store.delete_edge(args.edge_id)
    if out.as_json:
        out.json(edge)
    else:
        out.text(f"Deleted edge {edge['id']}.")
    return 0


def _print_nodes(out: Out, nodes: list[dict], extra=None) -> None:
    if not nodes:
        out.text("No nodes.", style="dim")
    for n in nodes:
        dims = f"  #{' #'.join(n['dimensions'])}" if n["dimensions"] else ""
        out.text((f"[{n['id']}] ", "dim"), (n["title"], "bold"), (dims, "cyan"), (extra(n) if extra else "", "dim"))


def cmd_search(args, out: Out) -> int:
    from core.search.searcher import Searcher

    with _store(args, readonly=True) as store:
        hits = Searcher(store).search(args.query, mode=args.mode, limit=args.limit, dimension=args.dimension,
                                      node_id=args.node)
        pending = store.counts()["pending"] if not hits and args.mode != "fts" else 0
    if out.as_json:
        out.json(hits)
        return 0
    if not hits:
        out.text("No matches.", style="dim")
    if pending:  # meaning search cannot see them yet; keywords can
        out.text(f"Not indexed yet: {_n(pending, 'node')}; run `cairn index` so that meaning search sees "
                 "them (keyword search, --mode fts, already does).", style="dim")
    for h in hits:
        where = " › ".join(h["chunk"]["heading_path"]) if h["chunk"] and h["chunk"]["heading_path"] else ""
        out.text((f"[{h['id']}] ", "dim"), (h["title"], "bold"), (f"  {h['score']:.4g}", "dim"),
                 (f"  {where}" if where else "", "cyan"))
        if h["chunk"]:
            snippet = " ".join(h["chunk"]["text"].split())
            out.text("    " + (snippet[:200] + "…" if len(snippet) > 200 else snippet))
    return 0


def cmd_hubs(args, out: Out) -> int:
    with _store(args, readonly=True) as store:
        hubs = store.hubs(args.limit)
    if out.as_json:
        out.json(hubs)
    else:
        _print_nodes(out, hubs, lambda n: f"  edges: {n['edge_count']}")
    return 0


def cmd_list(args, out: Out) -> int:
    with _store(args, readonly=True) as store:
        nodes = store.recent(args.limit, dimension=args.dimension)
    if out.as_json:
        out.json(nodes)
    else:
        _print_nodes(out, nodes, lambda n: f"  {n['updated_at'][:16].replace('T', ' ')}")
    return 0


def cmd_index(args, out: Out) -> int:
    from core.index.indexer import Indexer

    with _store(args) as store:
        indexer = Indexer(store)
        if indexer.pending_count() == 0 and not args.json:
            out.text("Nothing to index: every node is up to date.")
            return 0
        with _lazy_progress(out, "Indexing", "nodes") as progress:  # no empty bar before an error or for --json of nothing
            report = indexer.run(progress=progress)
    if out.as_json:
        out.json(report.as_dict())
    else:
        rate = report.indexed / report.seconds if report.seconds else 0
        out.text(f"Indexed {_n(report.indexed, 'node')} ({_n(report.chunks, 'chunk')}; {report.embedded} embedded, "
                 f"{report.reused} reused) in {report.seconds:.1f} s, {rate:.1f} nodes/s.")
        if report.skipped:
            out.text(f"{report.skipped} nodes changed while being indexed; they stay queued for the next run.")
        if report.errors:
            out.text(f"{report.errors} nodes failed to index; `cairn doctor` lists them.", style="red")
    return 1 if report.errors else 0


class _progress:
    """A Rich progress bar on stderr with count, rate and ETA; core calls it as progress(done, total)."""

    def __init__(self, out: Out, label: str, unit: str):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        class Rate(TextColumn):
            def render(self, task):
                from rich.text import Text

                speed = task.finished_speed or task.speed
                return Text(f"{speed:.1f} {unit}/s" if speed else f"– {unit}/s", style="progress.data.speed")

        self.bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), Rate(""),
                            TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True),
                            transient=False)
        self.task = None

    def __enter__(self):
        self.bar.start()
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc):
        self.bar.stop()


def cmd_doctor(args, out: Out) -> int:
    from core.ops import doctor
    from core.index.embedder import MODEL_NAME

    with _store(args) as store:
        reindex = None
        if args.repair:
            def reindex() -> int:
                from core.index.indexer import Indexer

                with _progress(out, "Re-indexing", "nodes") as progress:
                    return Indexer(store).run(progress=progress).indexed
        from core.graph.retention import Policy

        report = doctor.check(store, repair=args.repair, embedder_name=MODEL_NAME, reindex=reindex,
                              retention_policy=Policy.from_config(_config(args)))
    if out.as_json:
        out.json(report.as_dict())
    else:
        for f in report.findings:
            mark, style = ("ok", "green") if not f.count else (("repaired", "yellow") if f.repaired else ("problem", "red"))
            out.text((f"{mark:>8} ", style), f"{f.check}: ", (f.detail, "dim"))
        for item in report.memory_removed:
            out.text(f"{'trashed':>8} ", f"memory node {item['id']} ", (f"{item['title']}: {item['reason']}", "dim"))
        if report.repairable and not args.repair:
            out.text("Run `cairn doctor --repair` to fix " + ("these." if len(report.repairable) == len(report.problems)
                                                             else ", ".join(f.check for f in report.repairable) + "."))
    return 0 if report.clean else 1


def cmd_backup(args, out: Out) -> int:
    from core import clock

    with _store(args) as store:
        target = backup_target(args.path, store.path,
                               f"{store.path.stem}-backup-{clock.now().replace(':', '').replace('.', '')}.db")
        store.db.backup(target)
    if out.as_json:
        out.json({"backup": str(target)})
    else:
        out.text(f"Backed up to {target}")
    return 0


# -- import, export, watch -----------------------------------------------------------------------
LIST_CAP = 20  # lines of a list (skipped files, unresolved links) shown before "... and N more"


class _lazy_progress(_progress):
    """The progress bar, shown from the first count on: an early error prints no empty bar."""

    def __enter__(self):
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.task is None:
            if not total:  # nothing to do: no 0/0 bar
                return
            self.bar.start()
        super().__call__(done, total)

    def __exit__(self, *exc):
        if self.task is not None:
            self.bar.stop()
            self.bar.remove_task(self.task)
            self.task = None


def _capped(out: Out, title: str, items: list, style: str = "yellow") -> None:
    if not items:
        return
    out.text(f"{title} ({len(items):,}):", style=style)
    for where, what in items[:LIST_CAP]:
        out.text(f"  {where}: {what}" if where else f"  {what}", style="dim")
    if len(items) > LIST_CAP:
        out.text(f"  … and {len(items) - LIST_CAP:,} more (--json lists them all)", style="dim")


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _print_vault_report(out: Out, r) -> None:
    moved = f", {len(r.renamed)} moved" if r.renamed else ""
    restored = f", {r.restored} restored from the trash" if r.restored else ""
    trashed = f", {len(r.trashed)} moved to the trash" if r.trashed else ""
    out.text(f"{_n(r.files, 'note')} in {r.folder}: ", (f"{r.created:,} created", "green"),
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
            out.text(f"{_n(pending, 'node')} wait for indexing (--no-index); run `cairn index`.", style="dim")
        if state is not None:
            state["told"] = True
        return None
    from core.index.indexer import Indexer

    state = state if state is not None else {}
    if "indexer" not in state:
        state["indexer"] = Indexer(store)
    with _lazy_progress(out, "Indexing", "nodes") as progress:
        report = state["indexer"].run(progress=progress)
    if not out.as_json:
        out.text(f"Indexed {_n(report.indexed, 'node')} ({report.chunks:,} chunks) in {report.seconds:.1f} s.", style="dim")
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
                               "to import one note, give its folder.")
        if is_cairn_database(path):
            raise InvalidInput(f"{path} is a Cairn database (a backup or a copy?), not an RA-H OS one; open it with "
                               f"`cairn --db {path}`; nothing was imported.")
        kind = "raha"
    else:
        raise InvalidInput(f"There is no folder or file at {path}.")
    with _store(args) as store:
        if kind == "vault":
            from core.vault.sync import import_vault

            with _lazy_progress(out, "Importing", "files") as progress:
                report = import_vault(store, path, progress, prune=args.prune)
        else:
            from core.vault.raha import import_raha

            with _lazy_progress(out, "Importing", "nodes") as progress:
                report = import_raha(store, path, progress)
        if not out.as_json:
            if kind == "vault":
                _print_vault_report(out, report)
            else:
                out.text(f"RA-H OS database {report.path}: {report.nodes:,} nodes: ", (f"{report.created:,} created", "green"),
                         f", {report.updated:,} updated, {report.unchanged:,} unchanged, {len(report.skipped):,} skipped"
                         f" (dimensions from {report.dimensions_from}; {report.seconds:.1f} s).")
                out.text(f"Edges: {report.edges:,} ({report.edges_created:,} created, {report.edges_updated:,} updated, "
                         f"{report.edges_removed:,} removed; {report.edges_skipped:,} dangling, self or duplicate left out).",
                         style="dim")
                if report.gone:
                    out.text(f"{report.gone:,} nodes imported before are no longer in that database; they were kept.",
                             style="dim")
                _capped(out, "Skipped", report.skipped)
                _capped(out, "Warnings", report.warnings)
        index = _index_after(args, out, store)
    if out.as_json:
        out.json({"kind": kind, **report.as_dict(), "index": index.as_dict() if index else None})
    return 1 if index is not None and index.errors else 0


def cmd_export(args, out: Out) -> int:
    from core.vault.export import export

    with _store(args, readonly=True) as store:
        with _lazy_progress(out, "Exporting", "nodes") as progress:
            report = export(store, args.dir, progress, force=args.force)
    if out.as_json:
        out.json(report.as_dict())
    else:
        removed = f"; removed {report.removed:,} files of nodes since deleted" if report.removed else ""
        out.text(f"Exported {_n(report.written, 'node')} and {_n(report.edges, 'edge')} to {report.folder}{removed}.")
        _capped(out, "Not written", report.skipped)
    return 1 if report.skipped else 0


def cmd_watch(args, out: Out) -> int:
    """Import the folder, then keep the database in step with it until Ctrl-C."""
    from core import clock
    from core.vault.watch import watch

    folder = Path(args.path).expanduser()
    with _store(args) as store:
        bar = _lazy_progress(out, "Importing", "files")
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
            print(f"cairn: {exc}", file=sys.stderr)

        try:
            watch(store, folder, None, changed, on_ready=ready, on_error=error, progress=bar)
        except KeyboardInterrupt:
            if not out.as_json:
                out.text("Stopped watching.")
            return 0
        finally:
            bar.__exit__(None, None, None)
    return 0


def cmd_eval(args, out: Out) -> int:
    from core.ops import beir
    from core.index.embedder import shared_embedder
    from core.index.indexer import Indexer
    from core.paths import data_dir
    from core.search.searcher import Searcher
    from core.graph.store import Store

    folder = Path(args.folder)
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder.")
    if not (folder / "corpus.jsonl").is_file():
        raise InvalidInput(f"{folder / 'corpus.jsonl'} is missing; a BEIR folder has corpus.jsonl, queries.jsonl and qrels.tsv.")
    embedder = shared_embedder()
    # The cache key covers everything that shapes the index: the embedder and the code that chunks
    # and embeds (so a changed chunker never reuses a stale collection).
    import hashlib

    from core.index import chunker
    from core.index import embedder as embedder_module
    from core.index import indexer as indexer_module
    from core.graph import migrations

    code = hashlib.sha256()
    for module in (chunker, embedder_module, indexer_module, migrations):
        code.update(Path(module.__file__).read_bytes())
    indexer_settings = f"{embedder.name}|{code.hexdigest()}"
    path = Path(args.db) if getattr(args, "db", None) else data_dir() / "eval" / (
        f"{folder.name}-{beir.corpus_fingerprint(folder, indexer_settings)}.db")
    with Store(path) as store:
        with _progress(out, "Ingesting", "docs") as progress:
            beir.ingest(store, folder, Indexer(store, embedder), progress=lambda stage, d, t: progress(d, t))
        searcher = Searcher(store, embedder, mirror=True)
        results = [beir.evaluate(searcher, store, folder, mode, args.split, max_queries=args.max_queries)
                   for mode in args.mode]
    if out.as_json:
        out.json(results[0] if len(results) == 1 else results)
    else:
        for r in results:
            out.text(f"{r['mode']:>7} {r['split']}: nDCG@10 {r['ndcg@10']:.4f}  recall@100 {r['recall@100']:.4f}  "
                     f"MRR@10 {r['mrr@10']:.4f}  ({r['queries']} queries, {r['seconds']} s)")
    return 0


def _focus_arg(args):
    from core.chat.focus import Focus

    ids: list[int] = []
    for part in (args.focus or "").split(","):
        part = part.strip()
        if part:
            if not part.isdigit():
                raise InvalidInput(f"--focus takes node ids separated by commas, not {part!r}.")
            ids.append(int(part))
    if args.primary is not None and args.primary not in ids:
        raise UsageError(f"--primary {args.primary} is not one of the --focus ids; add it to --focus.")
    return Focus(tuple(ids), args.primary if args.primary is not None else (ids[0] if ids else None))


def _config(args):
    from core import config as config_module

    cfg = config_module.load()
    for warning in cfg.warnings:
        print(f"cairn: warning: {warning}", file=sys.stderr)
    if getattr(args, "provider", None):
        cfg.chat.provider = args.provider
    if getattr(args, "model", None):
        cfg.chat.model = args.model
    if getattr(args, "agent", None):
        cfg.chat.agent = args.agent
    return cfg


def cmd_context(args, out: Out) -> int:
    """The exact request body the next message would send, and its blocks (no key needed)."""
    from core.chat.conversation import Chat
    from core.chat.context import ContextEngine
    from core.providers.request import ContextRequest
    from core.agent import profiles
    from core.providers.base import Turn
    from core.search.searcher import Searcher

    cfg = _config(args)
    from core.providers.factory import preview_provider

    provider = preview_provider(cfg)
    with _store(args) as store:
        for node_id in _focus_arg(args).ordered:
            store.get_node(node_id)  # a clear error for an unknown id
        last_usage = None
        if args.chat:
            chat = Chat(store, cfg, provider, chat_id=args.chat)
            request = chat.request(args.message, focus=_focus_arg(args))
            retrieval_note = chat.engine.retrieval_note
            key = chat.chat_key
            # Estimates before sending; what the provider reported for the last reply corrects them.
            replies = [m for m in chat.messages() if m["role"] == "assistant" and m["usage"]]
            last_usage = replies[-1]["usage"] if replies else None
        else:
            agent = profiles.get(cfg.chat.agent)
            never = set(cfg.never_send) if provider.remote else set()
            engine = ContextEngine(store, Searcher(store), agent, background_enabled=cfg.chat.background_context,
                                   never_send=never)
            engine.set_focus(_focus_arg(args))
            snapshot = engine.snapshot({"user_name": cfg.user_name or "the user", "chat_id": "new",
                                        "agent": agent.name, "model": provider.model})
            request = ContextRequest(snapshot, [], args.message, engine.suffix(args.message), provider.model)
            retrieval_note = engine.retrieval_note
            key = "cairn-chat-new"
        body = provider.body(Turn(request, [], key))
        blocks = [b.summary() for b in request.blocks()]
    from core.providers.anthropic_provider import min_cacheable

    prefix_est = sum(b["tokens_est"] for b in blocks if b["cached"])
    result = {"provider": provider.name, "model": provider.model, "blocks": blocks,
              "tokens_est_total": sum(b["tokens_est"] for b in blocks), "node_ids": request.node_ids,
              "retrieval_note": retrieval_note,
              "cache": {"prefix_tokens_est": prefix_est,
                        "min_cacheable_tokens": min_cacheable(provider.model) if provider.name == "anthropic" else 1024,
                        "last_reported_usage": last_usage},
              "body": body}
    if out.as_json:
        out.json(result)
    else:
        for b in blocks:
            out.text(f"{b['name']:>11} ", (("cached" if b["cached"] else "not cached").ljust(11), "green" if b["cached"] else "yellow"),
                     (f"~{b['tokens_est']} tokens (estimate)", "dim"))
        out.text(f"{'total':>11} ", " " * 11, (f"~{result['tokens_est_total']} tokens (estimate)", "dim"))
        cache = result["cache"]
        below = prefix_est < cache["min_cacheable_tokens"]
        out.text(f"cached prefix ~{prefix_est} tokens; {provider.model} caches prefixes from "
                 f"{cache['min_cacheable_tokens']} tokens" + (" — this one is too short to be cached" if below else ""),
                 style="yellow" if below else "dim")
        if last_usage:
            out.text(f"last reply, as reported: input {last_usage['input']} (cache read {last_usage['cache_read']}, "
                     f"write {last_usage['cache_write']}), output {last_usage['output']}", style="dim")
        out.text("")
        if retrieval_note:
            out.text(retrieval_note, style="yellow")
        out.text(request.suffix.text or "(empty suffix)")
    return 0


def cmd_ask(args, out: Out) -> int:
    """Stream a reply; Ctrl-C stops it and keeps the partial reply (marked incomplete)."""
    import queue
    import threading

    from core.chat.conversation import Chat
    from core.providers.factory import make_provider

    cfg = _config(args)
    provider = make_provider(cfg)
    message = _text_arg(args.message)
    if not message.strip():  # checked before a chat row is made: a refused ask leaves no empty chat
        raise InvalidInput("The message is empty.")
    focus = _focus_arg(args)

    def confirm(action: str, detail: dict) -> bool:
        if args.yes:
            return True
        if not sys.stdin.isatty():
            return False
        try:
            answer = input(f"\nThe model wants to {action}: {json.dumps(detail, ensure_ascii=False)[:300]} [y/N] ")
        except EOFError:  # Ctrl-D: a no
            return False
        return answer.strip().lower() in ("y", "yes")

    with _store(args) as store:
        for node_id in focus.ordered:
            store.get_node(node_id)  # a clear error for an unknown id, before a chat row is made
        chat = Chat(store, cfg, provider, chat_id=args.chat, confirm=confirm)
        chat.set_focus(focus)
        cancel = threading.Event()
        events: queue.Queue = queue.Queue()
        failure: list[BaseException] = []

        def work():
            from core.graph.store import Store

            # SQLite connections belong to one thread: the worker opens its own.
            with Store(store.path) as own:
                try:
                    worker_chat = Chat(own, cfg, provider, chat_id=chat.id, confirm=confirm)
                    worker_chat.set_focus(_focus_arg(args))
                    for event in worker_chat.send(message, cancel):
                        events.put(event)
                    events.put(worker_chat.last_reply)
                except BaseException as exc:  # handed to the main thread, which reports it
                    failure.append(exc)
                    events.put(None)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        reply = None
        streamed = []
        while True:
            try:
                item = events.get(timeout=0.1)
            except queue.Empty:
                continue
            except KeyboardInterrupt:
                cancel.set()
                continue
            if item is None:
                break
            if not hasattr(item, "type"):
                reply = item
                break
            if item.type == "text":
                streamed.append(item.text)
                if not out.as_json:
                    sys.stdout.write(item.text)
                    sys.stdout.flush()
            elif item.type == "tool_call" and not out.as_json:
                print(f"\n[tool] {item.tool_call.name} {item.tool_call.raw_arguments[:200]}", file=sys.stderr)
            elif item.type == "phase" and item.text == "citation_check" and not out.as_json:
                print("\n[checking citations… Ctrl-C skips; the reply is kept]", file=sys.stderr)
        thread.join(timeout=5)
        if failure:
            raise failure[0]
        passages = reply.citations.get("passages", {}) if reply else {}
        titles = {n["id"]: n["title"] for n in store.get_nodes(passages.values())} if passages else {}
    if out.as_json:
        out.json({"chat_id": chat.id, "message_id": reply.message_id, "text": reply.text, "status": reply.status,
                  "error": reply.error, "usage": reply.usage.as_dict(), "citations": reply.citations,
                  "citation_check": reply.citation_check.as_dict() if reply.citation_check else None,
                  "side_usage": reply.side_usage, "created_nodes": reply.created_nodes})
    else:
        print()
        if reply.status != "complete":
            out.text(f"[incomplete reply{': ' + reply.error if reply.error else ''}]", style="yellow")
        if reply.citation_check and reply.citation_check.lines():
            print()  # the citation check's problems, after a blank line (the reply text is as streamed)
            for line in reply.citation_check.lines():
                out.text(line, style="yellow")
        if passages:
            out.text("Sources:", style="bold")
            for n, node_id in passages.items():
                out.text(f"  [{n}] ", (f"[NODE:{node_id}] {titles.get(node_id, '(deleted)')}", "cyan"))
        u = reply.usage
        side = "".join(f" · + {purpose.replace('_', ' ')} {s.get('input', 0)} in/{s.get('output', 0)} out"
                       for purpose, s in reply.side_usage.items() if s)
        out.text(f"chat {chat.id} · tokens in {u.input} (cache read {u.cache_read}, write {u.cache_write}) · out {u.output}"
                 f"{side}", style="dim")
    return 0 if reply.status == "complete" else 1


def cmd_chats(args, out: Out) -> int:
    from core.chat.conversation import list_chats

    with _store(args, readonly=True) as store:
        chats = list_chats(store, args.limit)
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


def cmd_config(args, out: Out) -> int:
    """Show the settings (key status only, never a key), or change one: `cairn config set chat.provider anthropic`."""
    from core import config as config_module

    if args.action == "show" and args.key is not None:
        raise UsageError(f"`cairn config show` takes no KEY (got {args.key!r}); to change one: cairn config set KEY VALUE.")
    if args.action == "set":
        if not args.key or args.value is None:
            raise UsageError("Usage: cairn config set KEY VALUE (e.g. chat.provider anthropic).")
        if args.key.startswith("keys."):
            raise InvalidInput("Put API keys in the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY), not on a command line.")
        check_config_key(args.key)
        value: Any = args.value
        if value.lower() in ("true", "false"):
            value = value.lower() == "true"
        elif args.key == "privacy.never_send":
            value = [v.strip() for v in value.split(",") if v.strip()]
        path = config_module.set_value(args.key, value)
        if not out.as_json:
            out.text(f"Set {args.key} in {path}")
    cfg = config_module.load()
    for warning in cfg.warnings:
        print(f"cairn: warning: {warning}", file=sys.stderr)
    info = {"path": str(cfg.path), "exists": cfg.path.exists(), "user_name": cfg.user_name,
            "chat": dict(cfg.chat.__dict__), "model": cfg.model(), "never_send": cfg.never_send,
            "mcp_allow_edits": cfg.mcp_allow_edits,
            "keys": {p: cfg.key_status(p) for p in ("anthropic", "openai")}}
    if out.as_json:
        out.json(info)
    elif args.action != "set":
        out.text(f"config: {info['path']}" + ("" if info["exists"] else " (not created yet: defaults)"), style="dim")
        for k, v in info["chat"].items():
            out.text(f"chat.{k} = {v!r}")
        out.text(f"privacy.never_send = {info['never_send']!r}")
        for p, status in info["keys"].items():
            out.text(f"{p} key: {status}")
    return 0


def cmd_mcp(args, out: Out) -> int:
    """The MCP stdio server (core.agent.mcp_server); --print-config prints the client snippet instead."""
    from core.agent import mcp_server
    from core.paths import db_path

    path = db_path(getattr(args, "db", None))
    if args.print_config:
        out.json(mcp_server.client_config(path))
        return 0
    return mcp_server.serve(path)


def cmd_app(args, out: Out) -> int:
    import gc

    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # else the app draws escape codes into a pipe and waits
        raise CairnError("The app needs a terminal (standard input and output are not one here); in a script or "
                         "pipe use a verb, e.g. `cairn list` (`cairn --help` lists them).")

    # Startup allocates long-lived objects only (modules, classes, widgets): collecting them is wasted
    # work (~25 ms of the first frame, bench/tui.py). The app (manage_gc) freezes them and turns the
    # collector back on after its first frame (CairnApp._first_frame).
    gc.disable()
    from tui.app import run_app

    from core.paths import db_path

    return run_app(db_path(getattr(args, "db", None)))


# -- parser --------------------------------------------------------------------------------------
def _id(text: str) -> int:
    """An id argument: a whole number SQLite can hold (a larger one was an OverflowError traceback)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an id (a whole number)") from None
    if not -(2**63) <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{text} is out of range for an id")
    return value


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="PATH", type=path_arg, default=argparse.SUPPRESS, help="database file (default: see README)")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    reader = argparse.ArgumentParser(add_help=False)
    reader.add_argument("--json", action="store_true", help="print JSON")

    parser = argparse.ArgumentParser(
        prog="cairn", parents=[common],
        description="Cairn: a terminal-first knowledge graph. Run without a verb to open the app.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="verb", metavar="VERB")

    def verb(name, func, help, *, read=False):
        p = sub.add_parser(name, parents=[common, reader] if read else [common], help=help, description=help)
        p.set_defaults(func=func)
        if not read:
            p.set_defaults(json=False)
        return p

    p = verb("add", cmd_add, "add a note; prints its id", read=True)
    p.add_argument("text", nargs="?", help="the note's text, or - to read it from stdin")
    p.add_argument("--title", "-t", help="the title (default: the first line of the text)")
    p.add_argument("--description", help="a one-line summary")
    p.add_argument("--link", metavar="URL", help="where the note comes from")
    p.add_argument("--dimension", "-d", action="append", metavar="D", help="a dimension (repeatable)")
    p.add_argument("--event-date", metavar="YYYY-MM-DD", help="the date the note is about")
    p.add_argument("--type", default="note", help="the node's type (default: note)")

    p = verb("show", cmd_show, "show a node with its edges", read=True)
    p.add_argument("id", type=_id, help="the node's id")

    p = verb("edit", cmd_edit, "change a node (no options: edit its text in $EDITOR)", read=True)
    p.add_argument("id", type=_id, help="the node's id")
    p.add_argument("--title", "-t", help="a new title")
    p.add_argument("--text", help="new text, or - to read it from stdin")
    p.add_argument("--description", help="a new one-line summary")
    p.add_argument("--link", metavar="URL", help="a new source link")
    p.add_argument("--event-date", metavar="YYYY-MM-DD", help="a new event date")
    p.add_argument("--type", help="a new node type")
    p.add_argument("--dimension", "-d", action="append", metavar="D", help="replace the dimensions (repeatable)")
    p.add_argument("--add-dimension", action="append", metavar="D", help="add a dimension (repeatable)")
    p.add_argument("--remove-dimension", action="append", metavar="D", help="remove a dimension (repeatable)")

    p = verb("rm", cmd_rm, "move a node and its edges to the trash", read=True)
    p.add_argument("id", type=_id, help="the node's id")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")

    p = verb("restore", cmd_restore, "bring a node back from the trash", read=True)
    p.add_argument("id", type=_id, help="the node's id")
    verb("trash", cmd_trash, "list deleted nodes", read=True)

    p = verb("link", cmd_link, "join two nodes with an explained edge; prints its id", read=True)
    p.add_argument("from_id", type=_id, metavar="FROM", help="the id of the node the edge starts from")
    p.add_argument("to_id", type=_id, metavar="TO", help="the id of the node it points to")
    p.add_argument("--explanation", "-e", required=True, help="why they connect, as a sentence")

    p = verb("unlink", cmd_unlink, "delete an edge", read=True)
    p.add_argument("edge_id", type=_id, metavar="EDGE", help="the edge's id (cairn show lists them)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")

    p = verb("search", cmd_search, "search notes by keyword, meaning, or both (a query starting with - goes after --)", read=True)
    p.add_argument("query", help='words (OR-ed), "a phrase", prefix*, -excluded')
    p.add_argument("--mode", choices=["hybrid", "fts", "vector"], default="hybrid",
                   help="hybrid: keywords and meaning (default); fts: keywords; vector: meaning")
    p.add_argument("--limit", "-n", type=positive_int, default=10, metavar="N", help="at most N hits (default 10)")
    p.add_argument("--dimension", "-d", metavar="D", help="only nodes with this dimension")
    p.add_argument("--node", type=_id, metavar="ID", help="search only inside this node")

    p = verb("hubs", cmd_hubs, "the most-connected nodes", read=True)
    p.add_argument("--limit", "-n", type=positive_int, default=10, metavar="N", help="at most N (default 10)")
    p = verb("list", cmd_list, "recently updated nodes", read=True)
    p.add_argument("--limit", "-n", type=positive_int, default=20, metavar="N", help="at most N (default 20)")
    p.add_argument("--dimension", "-d", metavar="D", help="only nodes with this dimension")

    verb("index", cmd_index, "chunk and embed every pending node", read=True)
    p = verb("doctor", cmd_doctor, "check the database and index; --repair fixes what it finds", read=True)
    p.add_argument("--repair", action="store_true",
                   help="fix what it finds (orphans, stale or missing vectors, the search index, pending nodes)")
    from tui.cli_stats import cmd_stats

    verb("stats", cmd_stats, "counts, pending work, memory, database size and tokens sent this week", read=True)
    p = verb("backup", cmd_backup, "copy the database safely (while others write)", read=True)
    p.add_argument("path", nargs="?", type=path_arg,
                   help="the copy's file name, or a folder to put it in (default: beside the database)")
    p = verb("import", cmd_import, "import a folder of markdown notes (Obsidian vault) or an RA-H OS .sqlite; "
             "again: only changes", read=True)
    p.add_argument("path", metavar="PATH", type=path_arg, help="a folder of .md notes, or an RA-H OS database file")
    p.add_argument("--no-index", action="store_true", help="do not chunk and embed the imported notes now")
    p.add_argument("--prune", action="store_true",
                   help="move nodes whose file has left the folder to the trash (default: keep them)")
    p = verb("export", cmd_export, "write every node as a markdown file (frontmatter + text + edges)", read=True)
    p.add_argument("dir", metavar="DIR", type=path_arg, help="an empty folder, or one an earlier export wrote")
    p.add_argument("--force", action="store_true", help="write into a folder that holds other files")
    p = verb("watch", cmd_watch, "import a folder of markdown notes and keep the database in step with it "
             "(Ctrl-C stops)", read=True)
    p.add_argument("path", metavar="PATH", type=path_arg, help="the folder of .md notes")
    p.add_argument("--no-index", action="store_true", help="do not chunk and embed changed notes")

    def provider_options(p):
        p.add_argument("--provider", choices=["offline", "anthropic", "openai"],
                       help="this time only (default: chat.provider in the config)")
        p.add_argument("--model", help="this time only (default: chat.model, else the provider's default)")

    def chat_options(p):
        p.add_argument("--focus", metavar="ID,ID", help="node ids open in the Focus panel")
        p.add_argument("--primary", type=int, metavar="ID", help="the active tab (default: the first --focus id)")
        p.add_argument("--agent", choices=["orchestrator", "easy", "worker", "planner"],
                       help="the agent's instructions and tools (default: chat.agent in the config)")
        provider_options(p)
        p.add_argument("--chat", type=int, metavar="ID", help="continue this chat")

    p = verb("context", cmd_context, "show the exact request the next message would send", read=True)
    p.add_argument("message", help="the message it would send")
    chat_options(p)
    p = verb("ask", cmd_ask, "ask the chat a question (streams; Ctrl-C stops and keeps the partial reply)", read=True)
    p.add_argument("message", help="the message, or - to read it from stdin")
    chat_options(p)
    p.epilog = ("Without a provider the reply is an offline answer (quotes from your notes, no model). To use a model: "
                "`cairn config set chat.provider anthropic` (or openai) and set $ANTHROPIC_API_KEY / $OPENAI_API_KEY, "
                "or pass --provider for one question; an OpenAI-compatible server (Ollama ...) also needs "
                "`cairn config set chat.base_url URL`.")
    p.add_argument("--yes", "-y", action="store_true", help="confirm the model's edits without asking")
    p = verb("config", cmd_config, "show the settings, or `config set KEY VALUE`", read=True)
    p.add_argument("action", nargs="?", choices=["show", "set"], default="show", help="show (default) or set")
    p.add_argument("key", nargs="?", help="set: a setting such as chat.provider or privacy.never_send")
    p.add_argument("value", nargs="?", help="set: its value (true/false; never_send takes a,b,c)")
    p = verb("chats", cmd_chats, "list conversations", read=True)
    p.add_argument("--limit", "-n", type=positive_int, default=30, metavar="N", help="at most N (default 30)")
    from tui.cli_skills import cmd_skills

    p = verb("skills", cmd_skills, "list, show, create or edit the chat's skills (instructions the model loads on demand)",
             read=True)
    p.add_argument("action", nargs="?", choices=["list", "show", "new", "edit"], default="list",
                   help="list (default), show, new or edit a skill")
    p.add_argument("name", nargs="?", metavar="NAME", help="a skill name: lowercase letters, digits, hyphens")
    p.add_argument("--no-edit", action="store_true", help="new: write the template without opening $EDITOR")
    p.add_argument("--description", metavar="TEXT", help="new: the skill's one-line description")
    from tui.cli_distil import cmd_distil

    p = verb("distil", cmd_distil, "propose notes from a chat (additions, updates, retirements); --accept applies",
             read=True)
    p.add_argument("chat_id", type=_id, metavar="CHAT_ID", help="the chat's id (cairn chats lists them)")
    provider_options(p)
    p.add_argument("--accept", metavar="N,N", help="apply these proposals of the last `cairn distil CHAT_ID`")
    p.add_argument("--yes", "-y", action="store_true", help="apply without asking")
    from tui.cli_retire import cmd_retired, cmd_unretire

    p = verb("retired", cmd_retired, "list the nodes distilled chats retired: when, by which chat, why", read=True)
    p.add_argument("--limit", "-n", type=int, metavar="N", help="at most N, most recently retired first")
    p = verb("unretire", cmd_unretire, "bring back a retired node (into retrieval and hubs again)", read=True)
    p.add_argument("id", type=_id, help="the node's id")
    from tui.cli_workflows import add_arguments as workflow_arguments, cmd_integrate, cmd_links

    p = verb("integrate", cmd_integrate, "propose explained links from a node to related ones; --accept writes them",
             read=True)
    workflow_arguments(p, _id, model=True)
    p = verb("links", cmd_links, "link the nodes a node's text mentions by title or alias; --accept writes them",
             read=True)
    workflow_arguments(p, _id, model=False)
    p = verb("mcp", cmd_mcp, "run the MCP server on stdin/stdout (for Claude Desktop, Claude Code ...)")
    p.add_argument("--print-config", action="store_true",
                   help="print the JSON that registers this server with an MCP client, and exit")

    p = verb("eval", cmd_eval, "retrieval evaluation", read=True)
    p.add_argument("suite", choices=["beir"], help="the format of the collection")
    p.add_argument("folder", metavar="DIR", type=path_arg, help="a folder with corpus.jsonl, queries.jsonl and qrels.tsv")
    p.add_argument("--mode", action="append", choices=["fts", "vector", "hybrid"],
                   help="repeatable; default hybrid")
    p.add_argument("--split", choices=["test", "train"], default="test", help="which qrels (default: test)")
    p.add_argument("--max-queries", type=positive_int, metavar="N", help="evaluate only the first N queries")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "verb", None) == "eval" and not args.mode:
        args.mode = ["hybrid"]
    debug = getattr(args, "debug", False) or bool(os.environ.get("CAIRN_DEBUG"))
    out = Out(getattr(args, "json", False))
    func = getattr(args, "func", cmd_app)
    try:
        return func(args, out)
    except UsageError as exc:
        if debug:
            raise
        print(f"cairn: {exc}", file=sys.stderr)
        return 2
    except CairnError as exc:
        if debug:
            raise
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cairn: interrupted; committed work is kept (run the command again to resume).", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: a sentence, not a traceback
        if debug:
            raise
        print(f"cairn: unexpected error: {type(exc).__name__}: {exc} (run with --debug for details)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
