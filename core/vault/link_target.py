"""Which node a `[[link]]` in a note's text names (enter on a link in Focus): the rule a vault import
links by (core/vault/resolve.py's Resolver: the file name, then an alias, then a title; the nearest
when several), asked of the database instead of a folder's files.

A node imported from a folder answers to its file's name (`metadata.vault.path`); one made in Cairn has
no file, so a link finds it by its title or an alias only. Only the candidates are read: the nodes
whose title, an alias or file name is the link's (compared as Python's str.lower compares them, which
SQLite's lower() does only for ASCII: a SQL function does it). Trashed nodes are not in `nodes`; a
merged node's title is an alias of the node kept (core/graph/merge.py), so a link to it finds that one.
"""

from __future__ import annotations

import json
import posixpath

from core.vault.resolve import Resolver, _strip_suffix

# A node with no file gets a path no link can name (a link never holds a newline), so the Resolver
# finds it by title or alias only.
_NO_FILE = "\n{}"


def _lower(value):
    return value.lower() if isinstance(value, str) else None


def _stem(path):
    return posixpath.basename(_strip_suffix(path).lower()) if isinstance(path, str) else None


def _needle(name: str) -> str:
    """The longest stretch of `name` that SQLite's lower() folds as str.lower does (ASCII, and characters
    without case) and that JSON writes as it is (no quote, backslash or control character), lowered: every
    title, alias or file path that names `name` holds it, in its row as stored."""
    runs, run = [], []
    for ch in name:
        if (ch.isascii() or ch.lower() == ch.upper()) and ch not in '"\\' and ch.isprintable():
            run.append(ch)
        else:
            runs.append("".join(run))
            run = []
    runs.append("".join(run))
    return max(runs, key=len).lower()


def _candidates(conn, rel: str, key: str) -> list:
    """The nodes a link to `rel` (`key`: lowered, without .md) may name: a scan of titles and metadata for
    a stretch of the name (_needle), then the exact rule in Python (the Resolver). ~70 ms at 100k nodes
    (bench/link_follow.py, bench/results/link_follow.json); a name with no such stretch is compared row
    by row in Python (~0.21 s there)."""
    columns = ("SELECT id, title, json_extract(metadata, '$.aliases') AS aliases,"
               " json_extract(metadata, '$.vault.root') AS root, json_extract(metadata, '$.vault.path') AS path"
               " FROM nodes WHERE ")
    needle = _needle(posixpath.basename(key))
    if needle:
        return conn.execute(columns + "instr(lower(title), ?) OR instr(lower(metadata), ?)", (needle, needle)).fetchall()
    conn.create_function("cairn_lower", 1, _lower, deterministic=True)
    conn.create_function("cairn_stem", 1, _stem, deterministic=True)
    names = [rel.lower(), key]
    return conn.execute(
        columns + "cairn_lower(title) IN (?, ?)"
        " OR (instr(metadata, '\"vault\"') AND cairn_stem(json_extract(metadata, '$.vault.path')) = ?)"
        " OR (instr(metadata, '\"aliases\"') AND json_type(metadata, '$.aliases') = 'array' AND EXISTS ("
        "SELECT 1 FROM json_each(metadata, '$.aliases') WHERE cairn_lower(value) IN (?, ?)))",
        (*names, posixpath.basename(key), *names)).fetchall()


def node_for(store, target: str, from_node: dict | None = None) -> int | None:
    """The id of the node `target` (a link's target, as core.vault.parse reads it) names, or None.
    `from_node`: the note the link is in, for "the nearest when several"."""
    rel, key = Resolver._parse(target)
    if not rel:
        return None
    rows = _candidates(store.db.conn, rel, key)
    if not rows:
        return None
    root = ((from_node or {}).get("metadata") or {}).get("vault", {}).get("root")
    source_rel = ((from_node or {}).get("metadata") or {}).get("vault", {}).get("path") or ""
    by_rel: dict[str, int] = {}
    notes = []
    # a folder's own notes first: two folders may hold the same path, and the link's folder wins
    for row in sorted(rows, key=lambda r: (r["root"] != root, r["id"])):
        path = row["path"] if isinstance(row["path"], str) and row["path"] else _NO_FILE.format(row["id"])
        if path in by_rel:
            continue
        aliases = json.loads(row["aliases"]) if row["aliases"] else []
        by_rel[path] = row["id"]
        notes.append((path, row["title"], [a for a in aliases if isinstance(a, str)]))
    kind, found = Resolver(notes, set()).resolve(target, source_rel if root else "")
    return by_rel[found] if kind == "note" and found is not None else None
