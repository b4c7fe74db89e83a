"""Every node as a markdown file that Obsidian opens and `cairn import` reads back unchanged.

A file is YAML frontmatter (cairn_id, cairn_db, title, aliases, description, dimensions, link, date,
the node's other imported frontmatter, and `cairn_edges`: each outgoing edge as a wikilink target
with its explanation) followed by the node's text exactly as stored. Edges live in the frontmatter
and the body's own wikilinks are left alone, so export → import changes nothing and creates no
duplicate edge (DESIGN.md, Vault sync). `cairn_id` + `cairn_db` (this database's id) let an import
into the same database find the same node even after the file was renamed.

Where the file goes: a node imported from a vault keeps its folder and file name (so the body's
links still resolve); any other node is named after its title. Every path part is made safe: no
`/`, `\\`, `..`, leading dot, control or reserved characters, no Windows device name (CON, NUL ...),
at most MAX_NAME_BYTES; collisions get ` (id)` appended, decided in id order so the result is
deterministic. Nothing is ever written outside the target folder (symlinked folders are refused).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import time
import unicodedata
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from core.errors import DatabaseError, InvalidInput
from core.graph.store import Store, node_record

MARKER = ".cairn-export.json"  # the files a previous export wrote: re-exporting may replace them
MAX_NAME_BYTES = 120  # per path part, before " (id).md"; far below the 255-byte limit of common file systems
MAX_DEPTH = 8
BATCH_NODES = 500
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}
# Path separators, characters Windows refuses, and the ones that break an Obsidian wikilink.
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*#^\[\]]')

Progress = Callable[[int, int], None]


def safe_name(text: str, fallback: str = "Untitled") -> str:
    """One path part that is safe on Linux, macOS and Windows and inside a wikilink."""
    name = unicodedata.normalize("NFC", text or "")
    name = _UNSAFE.sub(" ", name)
    name = " ".join(name.split()).strip(" .")
    if not name:
        name = fallback
    if name.split(".")[0].strip().upper() in _RESERVED:
        name = "_" + name
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        name = name.encode("utf-8")[:MAX_NAME_BYTES].decode("utf-8", "ignore")
        name = name.rstrip(" .") or fallback
    return name


def _folder_parts(vault_path: str) -> list[str]:
    """The safe folder parts of a stored vault path (never `..`, never absolute)."""
    parts = [p for p in re.split(r"[/\\]+", vault_path)[:-1] if p not in ("", ".", "..")]
    return [safe_name(p, "folder") for p in parts][:MAX_DEPTH]


def _stem(name: str) -> str:
    low = name.lower()
    for suffix in (".md", ".markdown"):
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


def plan_names(rows) -> dict[int, str]:
    """node id → relative file path (POSIX, `.md`), deterministic for the same nodes."""
    taken: set[str] = set()
    names: dict[int, str] = {}
    for node_id, title, vault_path in sorted(rows, key=lambda r: r[0]):
        if vault_path:
            folder = _folder_parts(vault_path)
            stem = safe_name(_stem(posixpath.basename(vault_path.replace("\\", "/"))), safe_name(title))
        else:
            folder, stem = [], safe_name(title)
        base = "/".join([*folder, stem])
        candidate, n = base, 1
        while candidate.casefold() + ".md" in taken:
            candidate = f"{base} ({node_id})" if n == 1 else f"{base} ({node_id}-{n})"
            n += 1
        taken.add(candidate.casefold() + ".md")
        names[node_id] = candidate + ".md"
    return names


def database_id(store: Store) -> str:
    """A random id for this database, made once: `cairn_db` in exported files."""
    value = store.meta("db_id")
    if not value:
        value = uuid.uuid4().hex
        try:
            store.set_meta("db_id", value)
        except DatabaseError as exc:
            if "read-only" not in str(exc):
                raise
            # Exporting only reads: a read-only database exports without an id (an import of these files
            # then matches notes by content and path instead of cairn_id, as for any vault).
            return ""
    return value


def render(node: dict, edges: list[tuple[str, str]], db_id: str) -> str:
    """The file for one node: frontmatter, then its text unchanged."""
    import yaml

    meta = node.get("metadata") or {}
    fm: dict = {"cairn_id": node["id"], "cairn_db": db_id, "title": node["title"]}
    aliases = meta.get("aliases")
    if isinstance(aliases, list) and aliases:
        fm["aliases"] = [str(a) for a in aliases]
    if node["description"]:
        fm["description"] = node["description"]
    if node["dimensions"]:
        fm["dimensions"] = list(node["dimensions"])
    if node["link"]:
        fm["link"] = node["link"]
    if node["event_date"]:
        fm["date"] = node["event_date"]
    if node["type"] != "note":
        fm["cairn_type"] = node["type"]
    used = {k.lower() for k in fm} | {"tags", "tag", "alias", "event_date", "url", "cairn_edges"}
    extra = meta.get("frontmatter")
    if isinstance(extra, dict):
        for key, value in extra.items():
            if key.lower() not in used:
                fm[key] = value
    if edges:
        fm["cairn_edges"] = [{"to": f"[[{target}]]", "explanation": why} for target, why in edges]
    head = yaml.safe_dump(fm, allow_unicode=True, sort_keys=False, default_flow_style=False, width=1_000_000)
    return f"---\n{head}---\n{node['source']}"


@dataclass
class ExportReport:
    folder: str
    written: int = 0
    removed: int = 0  # files of an earlier export whose node is gone
    edges: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data["skipped"] = [list(s) for s in self.skipped]
        return data


def _safe_dir(target: Path, parts: list[str]) -> Path:
    """target/parts, created; refuses a part that is a symlink or a file (so nothing escapes target)."""
    here = target
    for part in parts:
        here = here / part
        if os.path.islink(here):
            raise InvalidInput(f"{here} is a symbolic link; not writing through it")
        if here.exists() and not here.is_dir():
            raise InvalidInput(f"{here} is a file, not a folder")
        here.mkdir(exist_ok=True)
    if os.path.realpath(here) != os.path.join(os.path.realpath(target), *parts):
        raise InvalidInput(f"{here} leads outside {target}")
    return here


def _write(folder: Path, name: str, text: str) -> None:
    """Write atomically (temp file + rename) without following a symlink at the destination."""
    final = folder / name
    if final.is_dir() and not final.is_symlink():
        raise InvalidInput(f"{final} is a folder")
    tmp = folder / f".{name}.cairn-tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, final)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def export(store: Store, folder: str | Path, progress: Progress | None = None, *, force: bool = False) -> ExportReport:
    """Write every node to `folder` (created if needed). A folder that holds other files is refused
    unless it holds an earlier Cairn export (then its files are replaced) or `force` is set."""
    started = time.monotonic()
    target = Path(folder).expanduser()
    if target.exists() and not target.is_dir():
        raise InvalidInput(f"{folder} is a file; give a folder to export into.")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"Cannot create the folder {folder}: {exc.strerror or exc}.") from None
    target = target.resolve()
    marker = target / MARKER
    previous: list[str] = []
    if marker.is_file():
        try:
            previous = [p for p in json.loads(marker.read_text(encoding="utf-8")).get("files", []) if isinstance(p, str)]
        except (ValueError, OSError, AttributeError):
            previous = []
    elif any(True for _ in target.iterdir()) and not force:
        raise InvalidInput(f"{target} is not empty and holds no earlier Cairn export; choose an empty folder "
                           "(or pass --force to write into it).")
    report = ExportReport(folder=str(target))
    db_id = database_id(store)
    rows = store.db.execute(
        "SELECT id, title, json_extract(metadata, '$.vault.path') FROM nodes ORDER BY id").fetchall()
    names = plan_names([(r[0], r[1], r[2]) for r in rows])
    outgoing: dict[int, list[tuple[str, str]]] = {}
    for r in store.db.execute("SELECT from_node_id, to_node_id, explanation FROM edges ORDER BY from_node_id, id"):
        outgoing.setdefault(r[0], []).append((_stem(names[r[1]]), r[2]))
    total = len(names)
    if progress:
        progress(0, total)
    ids = list(names)
    written: list[str] = []
    for start in range(0, total, BATCH_NODES):
        batch = ids[start:start + BATCH_NODES]
        for row in store.db.execute(
            "SELECT * FROM nodes WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", (json.dumps(batch),)
        ).fetchall():
            node = node_record(row)
            rel = names[node["id"]]
            parts = rel.split("/")
            try:
                here = _safe_dir(target, parts[:-1])
                edges = outgoing.get(node["id"], [])
                _write(here, parts[-1], render(node, edges, db_id))
            except (InvalidInput, OSError) as exc:
                report.skipped.append((rel, str(exc) if isinstance(exc, InvalidInput) else (exc.strerror or str(exc))))
                continue
            written.append(rel)
            report.written += 1
            report.edges += len(edges)
        if progress:
            progress(min(start + len(batch), total), total)
    keep = set(written)
    for rel in previous:
        if rel in keep or rel.startswith("/") or ".." in rel.split("/"):
            continue
        path = target.joinpath(*rel.split("/"))
        inside = os.path.realpath(path) == os.path.join(os.path.realpath(target), *rel.split("/"))
        if inside and path.is_file() and not path.is_symlink():
            path.unlink()
            report.removed += 1
    marker_tmp = target / (MARKER + ".tmp")
    marker_tmp.write_text(json.dumps({"cairn_db": db_id, "files": written}, ensure_ascii=False), encoding="utf-8")
    os.replace(marker_tmp, marker)
    report.seconds = round(time.monotonic() - started, 3)
    return report
