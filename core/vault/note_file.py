"""The file of a vault note after Cairn changed it (`render_note`), so that importing it gives the node back.

The body is the node's text, exactly. The frontmatter holds what core.vault.parse reads into the node's
fields: `title` (only when the first `# heading` or the file name would not give the title),
`aliases`, `description`, dimensions (`tags` when the file uses tags and the dimension can be a tag,
else `dimensions`), `link`, the event date (`date`), `cairn_type` and `cairn_edges` (the edges Cairn
made). The file's own layout is kept: its keys stay in their order under the names it uses (`url`,
`alias`, `event_date` ...), and a key whose value did not change keeps its text as written (quotes,
flow lists, comments); new keys go after the user's. Nothing device-specific goes into the file: an
old `cairn_id` / `cairn_db` is dropped.

For a note imported from a vault (`metadata.vault`), the node is the truth: its `metadata.frontmatter`
holds the file's other keys, so a key the node no longer has is dropped. The caller merges a file that
changed since the last sync into the node first. For any other node, the file's other keys stay.

Rendering is a pure function of the node and the file: rendering its own output again gives the same
bytes, and a node that matches its file gives the file back unchanged, so an unchanged note is never
rewritten.

Limits, from the importer's rules: an inline `#tag` in the body is always a dimension again (the body
is the user's, and the `cairn_db` rule that switches inline tags off is device-specific); a title or
dimension with runs of spaces comes back with single spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any, Iterable

from core.graph.store import MAX_DIMENSION
from core.vault.export import safe_name
# The importer's own frontmatter pattern and key names: the file must be read back the way it is written.
from core.vault.parse import (_ALIAS_KEYS, _DATE_KEYS, _FRONTMATTER, _LINK_KEYS, _TAG_KEYS, _TITLE_KEYS,
                              ParsedNote, Skip, parse_note)

DEVICE_KEYS = ("cairn_id", "cairn_db")  # per database: never written into a shared file
_GROUP_OF = {
    **{k: "title" for k in _TITLE_KEYS},
    **{k: "aliases" for k in _ALIAS_KEYS},
    "description": "description",
    **{k: "dims" for k in _TAG_KEYS},
    **{k: "link" for k in _LINK_KEYS},
    **{k: "date" for k in _DATE_KEYS},
    "cairn_type": "type",
    "cairn_edges": "edges",
}
# The fields in the order new keys are added; the file's other keys follow, `cairn_edges` comes last.
_FIELDS = ("title", "aliases", "description", "dims", "link", "date", "type")
_TAG_SAFE = re.compile(r"[^\s,#][^\s,]*")  # survives the importer's split of `tags` on commas and spaces


@dataclass
class _Entry:
    """One top-level frontmatter key: its YAML key and value, and its text as written (None: dump it)."""

    key: Any
    value: Any
    text: str | None = None
    group: str = "extra"

    @property
    def name(self) -> str:
        return str(self.key)  # as core.vault.parse names it


@dataclass
class _Front:
    """A file's frontmatter, cut at its top-level keys."""

    opening: str  # the `---` line as written
    prefix: str  # comments before the first key
    entries: list[_Entry]
    closing: str  # the closing `---` (or `...`) line as written
    eol: str
    exact: bool  # entries carry their text as written (False: the YAML is dumped again if anything changes)
    original: str  # the whole frontmatter as written, both `---` lines included


def _yaml():
    import yaml

    return yaml


def _dump(key: Any, value: Any, eol: str) -> str:
    """One `key: value` as YAML. Characters PyYAML writes raw but reads as line breaks (NEL, U+2028)
    would not come back: such a value is written with escapes instead."""
    yaml = _yaml()
    for allow_unicode in (True, False):
        text = yaml.safe_dump({key: value}, allow_unicode=allow_unicode, sort_keys=False,
                              default_flow_style=False, width=1_000_000)
        if _same_value(_load(text), {key: value}):
            break
    return text if eol == "\n" else text.replace("\n", eol)


def _load(block: str) -> Any:
    yaml = _yaml()
    return yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _cut(block: str) -> tuple[str, list[_Entry]] | None:
    """The block's top-level keys, each with its text (up to the next key); None when the block is not
    a plain block mapping that can be cut that way (flow style, complex keys, merge keys ...)."""
    yaml = _yaml()
    loader = yaml.SafeLoader(block)
    try:
        root = loader.get_single_node()
        if root is None:
            return block, []
        if not isinstance(root, yaml.MappingNode) or root.flow_style:
            return None
        starts: list[int] = []
        entries: list[_Entry] = []
        for key_node, value_node in root.value:
            mark = key_node.start_mark
            start = mark.index - mark.column
            if block[start:mark.index].strip() or (starts and start <= starts[-1]):
                return None
            starts.append(start)
            entries.append(_Entry(loader.construct_object(key_node, deep=True),
                                  loader.construct_object(value_node, deep=True)))
    except (yaml.YAMLError, TypeError, ValueError):
        return None
    finally:
        loader.dispose()
    for i, entry in enumerate(entries):
        entry.text = block[starts[i]:starts[i + 1] if i + 1 < len(starts) else len(block)]
    return block[:starts[0]] if starts else block, entries


def _read_front(text: str, rel: str) -> _Front | None:
    """The frontmatter the importer reads from `text`; None when it reads none (or keeps it as text)."""
    m = _FRONTMATTER.match(text)
    if not m:
        return None
    try:
        if parse_note(text.encode("utf-8"), rel).source == text:
            return None  # invalid or too complex: the importer keeps the whole file as the text
    except Skip:
        return None
    nl = re.match(r"\r?\n", text[m.end(1):m.end()])
    block_end = m.end(1) + (nl.end() if nl else 0)
    opening, block, closing = text[:m.start(1)], text[m.start(1):block_end], text[block_end:m.end()]
    eol = "\r\n" if opening.endswith("\r\n") else "\n"
    cut = _cut(block)
    if cut is not None:
        prefix, entries = cut
        return _Front(opening, prefix, entries, closing, eol, exact=True, original=m.group())
    loaded = _load(block) or {}
    return _Front(opening, "", [_Entry(k, v) for k, v in loaded.items()], closing, eol, exact=False,
                  original=m.group())


def _eol_of(text: str) -> str:
    m = re.search(r"\r?\n", text)
    return m.group() if m else "\n"


def _assemble(front: _Front | None, prefix: str, entries: list[_Entry], eol: str, keep_text: bool) -> str:
    opening = front.opening if front else "---" + eol
    closing = front.closing if front else "---" + eol
    parts = [opening, prefix if keep_text else ""]
    for entry in entries:
        text = entry.text if keep_text and entry.text is not None else _dump(entry.key, entry.value, eol)
        if parts[-1] and not parts[-1].endswith(("\n", "\r")):
            parts.append(eol)
        parts.append(text)
    if parts[-1] and not parts[-1].endswith(("\n", "\r")):
        parts.append(eol)
    parts.append(closing)
    if not closing.endswith("\n"):
        parts.append(eol)
    return "".join(parts)


def _same_yaml(block: str, entries: list[_Entry]) -> bool:
    """Whether `block` (the frontmatter between its lines) loads as exactly the entries' keys and values."""
    yaml = _yaml()
    try:
        loaded = _load(block)
    except yaml.YAMLError:
        return False
    intended: dict = {}
    for entry in entries:
        intended[entry.key] = entry.value
    dump = lambda v: yaml.safe_dump(v, allow_unicode=True, sort_keys=False)  # noqa: E731 (NaN-safe compare)
    return dump(loaded or {}) == dump(intended)


def _same_value(a: Any, b: Any) -> bool:
    dump = _yaml().safe_dump
    return type(a) is type(b) and dump(a, allow_unicode=True) == dump(b, allow_unicode=True)


def _dedupe(tags: Iterable[str]) -> list[str]:
    """Dimensions as the importer keeps them: spaces collapsed, first spelling wins, none too long."""
    out: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        tag = " ".join(tag.split())
        if tag and tag.lower() not in seen and len(tag) <= MAX_DIMENSION:
            seen.add(tag.lower())
            out.append(tag)
    return out


def _event_date_value(value: str) -> Any:
    """A full date as a YAML date (`date: 2024-08-01`, as Obsidian writes it), a year as a number, a
    month as text: each reads back at the precision stored."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return date.fromisoformat(value)
    if re.fullmatch(r"\d{4}", value):
        return int(value)
    return value


def _wanted(node: dict, edges: Iterable[tuple[str, str]]) -> dict[str, Any]:
    meta = node.get("metadata") or {}
    aliases = meta.get("aliases")
    return {
        "title": node["title"],
        "aliases": [a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else [],
        "description": node.get("description") or "",
        "dims": list(node.get("dimensions") or []),
        "link": node.get("link") or None,
        "date": node.get("event_date") or None,
        "type": node.get("type") or "note",
        "edges": [(target.strip(), (why or "").strip()) for target, why in edges],
    }


def _got(note: ParsedNote) -> dict[str, Any]:
    return {
        "title": note.title,
        "aliases": note.aliases,
        "description": note.fields.get("description", ""),
        "dims": note.dims,
        "link": note.fields.get("link"),
        "date": note.fields.get("event_date"),
        "type": note.fields.get("type", "note"),
        "edges": [(link.target, link.explanation) for link in note.links if link.kind == "edge"],
    }


def _parse(front: _Front | None, prefix: str, entries: list[_Entry], source: str, eol: str, rel: str) -> ParsedNote:
    head = _assemble(front, prefix, entries, eol, keep_text=True)  # (an empty one without: the text stays the text)
    return parse_note((head + source).encode("utf-8"), rel)


def render_note(node: dict, *, existing_text: str | None, edges: Iterable[tuple[str, str]] = (),
                rel: str | None = None) -> str:
    """The content of the note file for `node` (a `node_record`), laid out like `existing_text` (the file
    as it is, or None for a new file). `edges`: (target note name, explanation) of the edges made in
    Cairn, written as `cairn_edges` (not the importer's edges from the body's links: those stay links).
    `rel`: the file's path in the vault, for the title its name gives; default the node's
    `metadata.vault.path`, else the title made a safe file name."""
    meta = node.get("metadata") or {}
    vault = meta.get("vault") if isinstance(meta.get("vault"), dict) else {}
    rel = rel or vault.get("path") or safe_name(node["title"]) + ".md"
    source = node["source"]
    want = _wanted(node, edges)

    bom, front = "", None
    if existing_text is not None:
        text = existing_text
        if text.startswith("\ufeff"):
            bom, text = "\ufeff", text[1:]
        front = _read_front(text, rel)
    eol = front.eol if front else _eol_of(source)
    prefix = front.prefix if front else ""
    entries = [e for e in (front.entries if front else []) if e.name.lower() not in DEVICE_KEYS]
    changed = front is not None and len(entries) != len(front.entries)

    got = _parse(front, prefix, entries, source, eol, rel)
    for entry in entries:
        if entry.name not in got.extra:
            entry.group = _GROUP_OF.get(entry.name.lower(), "extra")
    now = _got(got)
    added: list[_Entry] = []

    def replace(group: str, new: list[_Entry]) -> None:
        nonlocal entries, changed
        changed = True
        old = [e for e in entries if e.group == group]
        for entry in new:
            entry.group = group
            for before in old:  # the same key and value as written: keep how it was written
                if before.name == entry.name and _same_value(before.value, entry.value):
                    entry.key, entry.value, entry.text = before.key, before.value, before.text
                    break
        at = next((i for i, e in enumerate(entries) if e.group == group), None)
        entries = [e for e in entries if e.group != group]
        if at is None:
            added.extend(new)
        else:
            entries[at:at] = new

    def name(group: str, default: str, among: tuple[str, ...] | None = None) -> str:
        for entry in entries:
            if entry.group == group and (among is None or entry.name.lower() in among):
                return entry.name
        return default

    for group in (*_FIELDS, "extra", "edges"):
        if group == "extra":
            changed |= _render_extra(entries, added, meta, got, tracked=bool(vault))
            entries = [e for e in entries if e.group != "dropped"]
            continue
        value = want[group]
        if now[group] == value:
            continue
        if group == "dims":
            inline = _parse(front, prefix, [e for e in entries if e.group != "dims"], source, eol, rel).dims
            replace(group, _dims_entries(value, inline, tags_key=name("dims", "", ("tags", "tag")),
                                         dims_key=name("dims", "dimensions", ("dimensions",))))
        elif group == "title":
            replace(group, [_Entry(name(group, "title"), value)])
        elif group == "aliases":
            replace(group, [_Entry(name(group, "aliases"), value)] if value else [])
        elif group == "description":
            replace(group, [_Entry(name(group, "description"), value)] if value else [])
        elif group == "link":
            replace(group, [_Entry(name(group, "link"), value)] if value else [])
        elif group == "date":
            replace(group, [_Entry(name(group, "date"), _event_date_value(value))] if value else [])
        elif group == "type":
            replace(group, [_Entry(name(group, "cairn_type"), value)] if value != "note" else [])
        elif group == "edges":
            items = [{"to": f"[[{target}]]", "explanation": why} for target, why in value]
            replace(group, [_Entry(name(group, "cairn_edges"), items)] if items else [])
    edge_entries = [e for e in added if e.group == "edges"]
    entries += [e for e in added if e.group != "edges"] + edge_entries

    if front is not None and not changed:  # the frontmatter as written, byte for byte
        head = front.original
        return bom + head + ("" if not source or head.endswith("\n") else eol) + source

    if not entries and not prefix.strip():
        plain = bom + source
        try:
            if parse_note(plain.encode("utf-8"), rel).source == source:
                return plain
        except Skip:
            return plain
        # The text itself starts like frontmatter: an empty one before it keeps it the text.
        return bom + _assemble(None, "", [], eol, keep_text=False) + source

    exact = front.exact if front else True
    head = _assemble(front, prefix, entries, eol, keep_text=exact)
    if exact and not _same_yaml(_between(head), entries):
        head = _assemble(front, prefix, entries, eol, keep_text=False)
    return bom + head + source


def _between(head: str) -> str:
    """The YAML of an assembled frontmatter, without its `---` lines."""
    m = _FRONTMATTER.match(head)
    return m.group(1) if m else ""


def _render_extra(entries: list[_Entry], added: list[_Entry], meta: dict, got: ParsedNote, *, tracked: bool) -> bool:
    """The file's other keys made what the node holds; True if any changed. A key the node lacks is
    dropped for a note imported from a vault (the node is the truth), kept for any other."""
    wanted = meta.get("frontmatter") if isinstance(meta.get("frontmatter"), dict) else {}
    changed = False
    present: set[str] = set()
    for entry in entries:
        if entry.group != "extra":
            continue
        present.add(entry.name)
        if entry.name in wanted:
            if got.extra.get(entry.name) != wanted[entry.name]:
                entry.key, entry.value, entry.text = entry.name, wanted[entry.name], None
                changed = True
        elif tracked:
            entry.group = "dropped"
            changed = True
    taken = {e.name.lower() for e in entries if e.group != "dropped"}
    for key, value in wanted.items():
        if key not in present and key.lower() not in taken:
            added.append(_Entry(key, value, group="extra"))
            changed = True
    return changed


def _dims_entries(dims: list[str], inline: list[str], *, tags_key: str, dims_key: str) -> list[_Entry]:
    """The dimension keys that, with the body's inline tags, read back as `dims` in order: the shortest
    head of the list that does, under `tags` while each can be a tag (when the file uses tags), the rest
    under `dimensions`."""
    listed = list(dims)
    for k in range(len(dims) + 1):
        if _dedupe([*dims[:k], *inline]) == list(dims):
            listed = list(dims[:k])
            break
    if not listed:
        return []
    n = 0
    if tags_key:
        while n < len(listed) and _TAG_SAFE.fullmatch(listed[n]):
            n += 1
    out = []
    if n:
        out.append(_Entry(tags_key, listed[:n]))
    if listed[n:]:
        out.append(_Entry(dims_key, listed[n:]))
    return out
