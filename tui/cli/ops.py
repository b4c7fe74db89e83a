"""`cairn doctor stats backup`: the health, size and safety of the database."""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import DatabaseError, InvalidInput
from tui.cli.common import Out, Verbs, load_config, open_store, path_arg


def cmd_doctor(args, out: Out) -> int:
    from core.index.embedder import MODEL_NAME  # the default graph's name: what `cairn index` embeds with
    from core.ops import doctor

    try:
        opened = open_store(args)
    except DatabaseError as exc:
        if "damaged" not in str(exc):
            raise
        # The damage is where SQLite reads the schema (the file's first pages): nothing can be salvaged
        # row by row from here, so the error says where the copies are instead of "run cairn doctor".
        raise DatabaseError(str(exc).replace("; run `cairn doctor`.", "") + "; cairn doctor cannot open it "
                            "either. Restore a copy: `cairn backup` writes them, and a migration keeps the file "
                            "it started from beside the database as *.before-vN.bak.") from None
    with opened as store:
        reindex = None
        if args.repair:
            def reindex() -> int:
                from core.index.indexer import Indexer

                from tui.cli.index_bar import IndexBar

                with IndexBar(out, "Re-indexing") as progress:
                    return Indexer(store).run(progress=progress).indexed
        from core.graph.retention import Policy

        config = load_config(args)
        report = doctor.check(store, repair=args.repair, embedder_name=MODEL_NAME, reindex=reindex,
                              retention_policy=Policy.from_config(config),
                              keep_versions=config.history.keep_versions)
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


def cmd_stats(args, out: Out) -> int:
    """Node, edge, chunk and memory counts, pending work, database size, tokens this week."""
    from core.ops import stats

    cfg = load_config(args)
    with open_store(args, readonly=True) as store:
        result = stats.collect(store, cfg)
    if out.as_json:
        out.json(result)
        return 0
    rows = stats.lines(result)
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        out.text((f"{label:<{width}}  ", "bold"), value)
    return 0


def backup_target(arg: str | None, database: Path, default_name: str) -> Path:
    """Where `cairn backup` writes: a folder gets the default name inside it; never the database
    itself (`cairn backup cairn.db` wrote over it), never over an existing file (an earlier backup is
    not lost)."""
    if arg is None:
        target = database.with_name(default_name)
    else:
        target = Path(arg).expanduser()
        if target.is_dir() or arg.endswith(("/", os.sep)):  # `backups/` is a folder even before it exists
            target = target / default_name
    if target.resolve() == database.resolve():
        raise InvalidInput(f"{target} is the database itself; give another file name for the backup.")
    if target.exists():
        raise InvalidInput(f"{target} already exists; give a new file name (nothing was written).")
    return target


def cmd_backup(args, out: Out) -> int:
    from core import clock

    with open_store(args) as store:
        target = backup_target(args.path, store.path,
                               f"{store.path.stem}-backup-{clock.now().replace(':', '').replace('.', '')}.db")
        store.db.backup(target)
    if out.as_json:
        out.json({"backup": str(target)})
    else:
        out.text(f"Backed up to {target}")
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("doctor", cmd_doctor, "check the database and index; --repair fixes what it finds")
    p.add_argument("--repair", action="store_true",
                   help="fix what it finds (orphans, stale or missing vectors, the search index, pending nodes)")
    verbs.add("stats", cmd_stats, "counts, pending work, memory, database size and tokens sent this week")
    p = verbs.add("backup", cmd_backup, "copy the database safely (while others write)")
    p.add_argument("path", nargs="?", type=path_arg,
                   help="the copy's file name, or a folder to put it in (default: beside the database)")
