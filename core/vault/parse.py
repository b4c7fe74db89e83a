"""One markdown note file read into what its node becomes (`ParsedNote`).

A note is a `.md` (or `.markdown`) file. Its node:

- title: frontmatter `title`, else the first `# heading` outside code, else the file name;
- text (`source`): the body after the frontmatter, unchanged;
- dimensions: frontmatter `tags` (and `dimensions`, which `cairn export` writes) plus inline `#tags`
  outside code, comments, headings' marks and URLs. A nested tag such as `#area/sub` is kept whole,
  as one dimension `area/sub` (lossless, and it is how Obsidian names the tag). In a file written by
  `cairn export` (it has `cairn_db`) the `dimensions` list is complete and inline tags are not added,
  so a `#word` in a note's text does not become a dimension on the way back;
- `aliases` and every other frontmatter key are kept (`extra`); `date` (or `event_date`) that parses
  becomes the event date, `description` and `link` (or `url`) fill those fields.

Links read (`Link`): `[[Note]]`, `[[Note|alias]]`, `[[Note#Heading]]`, `![[embed]]`, the table-escaped
`[[Note\\|alias]]`, wikilinks in frontmatter values, `cairn_edges` entries, and markdown links to local
`.md` files. None of them is looked for in code or comments.
"""

from __future__ import annotations

import hashlib
import math
import os
import posixpath
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import unquote

from core.graph.store import MAX_DESCRIPTION, MAX_DIMENSION, MAX_TITLE, partial_date

NOTE_SUFFIXES = (".md", ".markdown")
MAX_NOTE_BYTES = 10_000_000  # a bigger file is skipped, not truncated (the store's text limit is 10M characters)
MAX_FRONTMATTER_ITEMS = 10_000  # YAML values; more (e.g. an alias bomb) and the frontmatter is refused
# Keys Cairn reads into node fields (compared case-insensitively); everything else is kept as is.
_TITLE_KEYS = ("title",)
_ALIAS_KEYS = ("aliases", "alias")
_TAG_KEYS = ("tags", "tag", "dimensions")
_DATE_KEYS = ("date", "event_date")
_LINK_KEYS = ("link", "url")
_CAIRN_KEYS = ("cairn_id", "cairn_db", "cairn_edges", "cairn_type")

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S | re.M)
_FENCE = re.compile(r"^(?:[ \t]*>)*[ \t]*(`{3,}|~{3,})(.*)$")
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_OBSIDIAN_COMMENT = re.compile(r"%%.*?(?:%%|\Z)", re.S)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MD_LINK = re.compile(r"(?<![!\\])\[([^\]\n]*)\]\(\s*<?([^)<>\s]+?\.(?:md|markdown))(#[^)\s>]*)?>?(?:\s+\"[^\"]*\")?\s*\)", re.I)
_TAG = re.compile(r"(?<!\S)#([\w\-/]+)")
_H1 = re.compile(r"^[ \t]{0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.M)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def _blank(text: str) -> str:
    """Same length, newlines kept: offsets stay true while the content disappears."""
    return re.sub(r"[^\n]", " ", text)


def mask_code(text: str) -> str:
    """The text with fenced and inline code, HTML comments and %%comments%% blanked out: links and
    tags are not looked for there (Obsidian does not make them links either)."""
    lines = text.split("\n")
    fence: tuple[str, int] | None = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence = (m.group(1)[0], len(m.group(1)))
                lines[i] = _blank(line)
        else:
            lines[i] = _blank(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not m.group(2).strip():
                fence = None
    text = "\n".join(lines)
    for pattern in (_INLINE_CODE, _HTML_COMMENT, _OBSIDIAN_COMMENT):
        text = pattern.sub(lambda m: _blank(m.group()), text)
    return text


@dataclass
class Link:
    """One link as written: `[[target#heading|alias]]`, `![[embed]]`, or `[text](target.md#h)`."""

    target: str
    heading: str = ""
    kind: str = "wiki"  # wiki | embed | md | property | edge (a `cairn_edges` entry)
    prop: str = ""  # the frontmatter key, for kind == "property"
    explanation: str = ""  # given, for kind == "edge"

    def shown(self) -> str:
        inner = self.target + (f"#{self.heading}" if self.heading else "")
        if self.kind == "md":
            return f"[{inner}]"
        return ("![[" if self.kind == "embed" else "[[") + inner + "]]"


def _split_alias(inner: str) -> tuple[str, str]:
    """`Note#Heading|alias` (the bar escaped as `\\|` inside a table) → (`Note#Heading`, `alias`)."""
    parts = re.split(r"\\?\|", inner, maxsplit=1)
    return parts[0], parts[1] if len(parts) > 1 else ""


def _wikilink(inner: str, kind: str, prop: str = "") -> Link | None:
    """`Note#Heading|alias` (or `Note#Heading\\|alias` inside a table) → Link; None if it has no target."""
    target = _split_alias(inner)[0]
    target, _, heading = target.partition("#")
    target = target.strip().rstrip("\\").strip()
    return Link(target, heading.strip(), kind, prop) if target or heading.strip() else None


def find_links(masked: str) -> list[Link]:
    links = []
    for m in _WIKILINK.finditer(masked):
        link = _wikilink(m.group(2), "embed" if m.group(1) else "wiki")
        if link:
            links.append(link)
    for m in _MD_LINK.finditer(masked):
        target = m.group(2)
        if _SCHEME.match(target):
            continue
        heading = unquote(m.group(3)[1:]) if m.group(3) else ""
        links.append(Link(unquote(target), heading, "md"))
    return links


@dataclass(frozen=True)
class WikiLink:
    """A `[[Note]]`, `[[Note|alias]]` or `[[Note#Heading]]` in a text, where it stands (`start`, `end`)."""

    start: int
    end: int
    link: Link
    shown: str  # what a reader sees: the alias, else the target (and heading) as written


def wikilinks(text: str) -> list[WikiLink]:
    """The links to notes in a text, in order: outside code and comments, not embeds (`![[…]]`),
    not a same-note `[[#Heading]]`."""
    found = []
    for m in _WIKILINK.finditer(mask_code(text)):
        if m.group(1):
            continue
        link = _wikilink(m.group(2), "wiki")
        if link is None or not link.target:
            continue
        inner = text[m.start(2):m.end(2)]
        alias = _split_alias(inner)[1].strip()
        found.append(WikiLink(m.start(), m.end(), link, alias or inner.strip()))
    return found


def find_tags(masked: str) -> list[str]:
    tags = []
    for m in _TAG.finditer(masked):
        tag = m.group(1).strip("/")
        if any(c.isalpha() for c in tag):  # `#2024` or `#1-2` is not a tag
            tags.append(tag)
    return tags


def first_heading(masked: str, text: str) -> str | None:
    m = _H1.search(masked)
    return text[m.start(1):m.end(1)].strip() if m else None


class _TooComplex(Exception):
    pass


def _clean_str(value: str) -> str:
    value = value.replace("\x00", "")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def _plain(value: Any, budget: list[int]) -> Any:
    """YAML values as JSON values; shared sub-trees (YAML aliases) count each time they are seen, so an
    alias bomb runs out of budget instead of memory."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooComplex
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return _clean_str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {_clean_str(str(k)): _plain(v, budget) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v, budget) for v in value]
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return _clean_str(str(value))


def _yaml_load(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def _strings(value: Any) -> list[str]:
    """A frontmatter value as a list of strings: `a` → [a]; `[a, b]` → [a, b]; None → []."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(_strings(v))
        return out
    if isinstance(value, dict):
        return []
    return [str(value)]


def _event_date(value: Any) -> str | None:
    """A frontmatter date at the precision it gives (core.graph.store.partial_date): a full date, a
    year-month ("2024-08") or a year (YAML reads `1981` as a number), so an exported node comes back
    with its date."""
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 9999:
        return partial_date(f"{value:04d}")
    if isinstance(value, str) and re.match(r"^\s*\d{4}-\d{2}-\d{2}(?:$|[ T])", value):
        try:
            return date.fromisoformat(value.strip()[:10]).isoformat()
        except ValueError:
            return None
    if isinstance(value, str):
        return partial_date(value)
    return None



def cap(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class ParsedNote:
    rel: str
    sha: str
    size: int
    mtime_ns: int
    title: str
    source: str
    dims: list[str]
    aliases: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # frontmatter keys Cairn does not read into fields
    fields: dict = field(default_factory=dict)  # description / link / event_date / type given by the file
    links: list[Link] = field(default_factory=list)
    cairn_id: int | None = None
    cairn_db: str | None = None
    warnings: list[str] = field(default_factory=list)


class Skip(Exception):
    """A file that is not imported; the message is the reason shown in the report."""


def read_note(path: Path, rel: str, max_bytes: int = MAX_NOTE_BYTES) -> ParsedNote:
    """Read and parse one note; raises Skip with a reason for binary, unreadable, huge or non-UTF-8 files."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_size > max_bytes:
                raise Skip(f"too large ({st.st_size:,} bytes; the limit is {max_bytes:,})")
            data = fh.read(max_bytes + 1)
    except Skip:
        raise
    except OSError as exc:
        raise Skip(f"unreadable ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise Skip(f"too large (over {max_bytes:,} bytes)")
    return parse_note(data, rel, st.st_size, st.st_mtime_ns)


def parse_note(data: bytes, rel: str, size: int = 0, mtime_ns: int = 0) -> ParsedNote:
    if b"\x00" in data:
        raise Skip("binary (contains NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Skip(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    sha = hashlib.sha256(data).hexdigest()
    stem = posixpath.basename(rel)
    for suffix in NOTE_SUFFIXES:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    warnings: list[str] = []
    frontmatter: dict = {}
    raw_dates: dict = {}
    body = text
    m = _FRONTMATTER.match(text)
    if m:
        try:
            loaded = _yaml_load(m.group(1))
            if loaded is None:
                loaded = {}
            if not isinstance(loaded, dict):
                raise ValueError("it is not a set of key: value pairs")
            frontmatter = _plain(loaded, [MAX_FRONTMATTER_ITEMS])
            raw_dates = {k: v for k, v in loaded.items() if str(k).lower() in _DATE_KEYS}
            body = text[m.end():]
        except _TooComplex:
            warnings.append("frontmatter too complex; kept as text")
        except Exception as exc:  # yaml.YAMLError and friends: keep the whole file as text, lose nothing
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            warnings.append(f"invalid frontmatter ({first}); kept as text")

    lower = {str(k).lower(): k for k in frontmatter}
    consumed: set[str] = set()

    def take(keys: Iterable[str]) -> list[tuple[str, Any]]:
        found = []
        for key in keys:
            if key in lower:
                found.append((lower[key], frontmatter[lower[key]]))
        return found

    masked = mask_code(body)
    title = None
    for key, value in take(_TITLE_KEYS):
        if isinstance(value, (str, int, float)) and str(value).strip():
            title = " ".join(str(value).split())
            consumed.add(key)
    title = title or first_heading(masked, body) or stem or "Untitled"
    title = cap(_clean_str(title), MAX_TITLE)

    aliases: list[str] = []
    for key, value in take(_ALIAS_KEYS):
        consumed.add(key)
        for item in _strings(value):
            # Obsidian once read `aliases: a, b` as two aliases
            aliases.extend(a.strip() for a in (item.split(",") if isinstance(value, str) else [item]))
    aliases = list(dict.fromkeys(_clean_str(a) for a in aliases if a.strip()))

    written_by_cairn = "cairn_db" in lower  # `cairn export`: its `dimensions` list is the whole truth
    tags: list[str] = []
    for key, value in take(_TAG_KEYS):
        consumed.add(key)
        for item in _strings(value):
            parts = re.split(r"[,\s]+", item) if key.lower() != "dimensions" else [item]
            tags.extend(p.strip().lstrip("#") for p in parts)
    if not written_by_cairn:
        tags.extend(find_tags(masked))
    dims: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        tag = " ".join(_clean_str(tag).split())
        if not tag or tag.lower() in seen:
            continue
        if len(tag) > MAX_DIMENSION:
            warnings.append(f"tag {tag[:20]!r}… is longer than {MAX_DIMENSION} characters; left out")
            continue
        seen.add(tag.lower())
        dims.append(tag)

    fields: dict[str, Any] = {}
    for key, value in take(_DATE_KEYS):
        parsed = _event_date(raw_dates.get(key, value))
        if parsed and "event_date" not in fields:
            fields["event_date"] = parsed
            consumed.add(key)
    for key, value in take(("description",)):
        if isinstance(value, str):
            if len(value) > MAX_DESCRIPTION:
                warnings.append(f"description cut to {MAX_DESCRIPTION:,} characters")
            fields["description"] = cap(value, MAX_DESCRIPTION)
            consumed.add(key)
    for key, value in take(_LINK_KEYS):
        if isinstance(value, str) and value.strip() and "link" not in fields:
            fields["link"] = value.strip()
            consumed.add(key)
    for key, value in take(("cairn_type",)):
        consumed.add(key)
        if isinstance(value, str) and 0 < len(value.strip()) <= 32:
            fields["type"] = value.strip()

    cairn_id = cairn_db = None
    for key, value in take(("cairn_id",)):
        consumed.add(key)
        if isinstance(value, int) and not isinstance(value, bool):
            cairn_id = value
    for key, value in take(("cairn_db",)):
        consumed.add(key)
        cairn_db = str(value) if value is not None else None

    links = find_links(masked)
    for key, value in take(("cairn_edges",)):
        consumed.add(key)
        for entry in value if isinstance(value, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("to"), str):
                continue
            to = entry["to"].strip()
            wl = _WIKILINK.fullmatch(to)
            link = _wikilink(wl.group(2), "edge") if wl else _wikilink(to, "edge")
            if link and link.target:
                explanation = entry.get("explanation")
                link.explanation = explanation.strip() if isinstance(explanation, str) else ""
                links.append(link)

    extra = {k: v for k, v in frontmatter.items() if k not in consumed}
    for key, value in extra.items():
        for item in _strings(value):
            for wm in _WIKILINK.finditer(item):
                link = _wikilink(wm.group(2), "property", key)
                if link:
                    links.append(link)

    return ParsedNote(rel=rel, sha=sha, size=size, mtime_ns=mtime_ns, title=title, source=body, dims=dims,
                      aliases=aliases, extra=extra, fields=fields, links=links, cairn_id=cairn_id,
                      cairn_db=cairn_db, warnings=warnings)
