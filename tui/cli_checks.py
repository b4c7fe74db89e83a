"""Checks on `cairn` arguments that argparse's types cannot express alone.

Each turns input that used to be accepted with a surprising result into one clear sentence:
`-n -1` listed everything, an empty PATH meant the current folder (`cairn import ""` imported
whatever lay there), `cairn backup DIR` was a ValueError and `cairn backup cairn.db` wrote over the
live database, and `cairn config set chats.provider x` (a typo) was "Set" in a table nothing reads.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from core.errors import InvalidInput


class UsageError(InvalidInput):
    """Arguments that do not form a command (exit 2, as argparse's own usage errors)."""


def positive_int(text: str) -> int:
    """A count such as --limit: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def path_arg(text: str) -> str:
    """A file or folder argument; an empty one would silently mean the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not a file or folder (use . for the current folder)")
    return text


def backup_target(arg: str | None, database: Path, default_name: str) -> Path:
    """Where `cairn backup` writes: a folder gets the default name inside it; never the database
    itself, never over an existing file (an earlier backup is not lost)."""
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


def check_config_key(dotted: str) -> None:
    """Refuse a key the config never reads (the loader itself checks the keys of [chat], [memory],
    [vault], but an unknown table or top-level key would be written and then ignored)."""
    import tomlkit

    from core.config import TEMPLATE

    template = tomlkit.parse(TEMPLATE)
    parts = dotted.split(".")
    tables = sorted(k for k, v in template.items() if isinstance(v, dict))
    if any(not p for p in parts) or len(parts) > 2:
        raise InvalidInput(f"`{dotted}` is not a setting: use KEY or TABLE.KEY, e.g. chat.provider. Nothing was changed.")
    if len(parts) == 1:
        if parts[0] not in template or parts[0] in tables:
            known = ", ".join(k for k in template if k not in tables)
            raise InvalidInput(f"Unknown setting `{dotted}` (top-level settings: {known}; "
                               f"tables: {', '.join(tables)}). Nothing was changed.")
        return
    table, key = parts
    if table not in tables:
        raise InvalidInput(f"Unknown table `{table}` in `{dotted}` (known: {', '.join(tables)}). Nothing was changed.")
    known_keys = list(template[table])
    if known_keys and key not in known_keys:  # [keymap] starts empty: any binding id
        raise InvalidInput(f"Unknown setting `{dotted}` (known in [{table}]: {', '.join(known_keys)}). "
                           "Nothing was changed.")


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
