"""Files on disk as nodes: PDFs (their text page by page, through PDFium), plain text, markdown and HTML.

`read_file(path)` turns one file into a `Captured` (title, text, pages) or raises `CaptureError` with one
sentence saying why nothing was imported: a type Cairn does not read, a binary file, a file over the
size cap, a PDF that is password-protected, corrupt, or has no text layer (a scan). What it could read
but not perfectly (bytes that were not UTF-8, pages without text, pages the reader could not open) is listed in `Captured.warnings`, never dropped silently.

A PDF's pages are joined with a blank line between them; `metadata.capture.page_starts` holds the
character offset where each page begins, so the indexer gives each chunk its page (core.index.chunker)
and a citation can say "p. 4" while the text stays clean. The node's `metadata.capture` is
`{path, sha256, kind, pages, page_starts, outline, extractor, title}`: `capture_file` and `capture_folder` skip
a file whose path and content hash were captured before (so a killed import resumes where it
stopped), update the node of a file that changed, and write each file in its own transaction.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from core.errors import InvalidInput
from core.graph import provenance
from core.graph.store import MAX_SOURCE, Store, title_from_text

MAX_FILE_BYTES = 100_000_000  # a larger file is refused before it is read
SNIFF_BYTES = 65_536  # a text file with a NUL byte in its first 64 KiB is binary
KINDS = {".pdf": "pdf", ".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown",
         ".html": "html", ".htm": "html", ".xhtml": "html"}
# what capture_folder takes; markdown goes through core.vault
FOLDER_SUFFIXES = (".pdf", ".txt", ".text", ".html", ".htm", ".xhtml")
MARKDOWN_SUFFIXES = (".md", ".markdown")  # a folder's notes (core.vault.parse NOTE_SUFFIXES)
PAGE_SEPARATOR = "\n\n"
_JUNK_TITLES = {"", "untitled", "unknown", "none", "title"}

Progress = Callable[[int, int], None]


class CaptureError(InvalidInput):
    """A file that could not be captured; the message says which file and why, in one sentence."""


@dataclass
class Captured:
    path: str  # absolute
    kind: str  # pdf | text | markdown
    title: str
    source: str
    sha256: str
    extractor: str
    pages: int | None = None
    page_starts: list[int] | None = None
    frontmatter: dict | None = None
    warnings: list[str] = field(default_factory=list)
    outline: list[list] | None = None  # a PDF's bookmarks as headings: [level, title, offset in source]

    def capture_meta(self) -> dict:
        meta = {"path": self.path, "sha256": self.sha256, "kind": self.kind, "extractor": self.extractor,
                "title": self.title}
        if self.pages is not None:
            meta["pages"] = self.pages
            meta["page_starts"] = self.page_starts
        if self.outline:
            meta["outline"] = self.outline
        return meta


# -- one file -----------------------------------------------------------------------------------
def read_bytes(path: str | Path) -> tuple[Path, bytes]:
    """The file's absolute path and bytes, after the checks that need no parsing (exists, type, size)."""
    p = Path(path).expanduser()
    name = p.name
    if not p.exists():
        raise CaptureError(f"There is no file at {p}.")
    if not p.is_file():
        raise CaptureError(f"{p} is not a file.")
    kind = KINDS.get(p.suffix.lower())
    if kind is None:
        raise CaptureError(f"{name} is {_describe_type(p)}; Cairn captures PDF (.pdf), plain text (.txt), "
                           "markdown (.md) and web page (.html) files, so nothing was imported.")
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise CaptureError(f"{name} is {size / 1e6:,.1f} MB; files over {MAX_FILE_BYTES / 1e6:,.0f} MB are not "
                           "captured, so nothing was imported.")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise CaptureError(f"{name} could not be read ({exc.strerror or exc}); nothing was imported.") from exc
    return p.resolve(), data


def read_file(path: str | Path) -> Captured:
    """One file as a Captured, or a CaptureError saying why not."""
    p, data = read_bytes(path)
    return parse(p, data)


def parse(p: Path, data: bytes) -> Captured:
    kind = KINDS[p.suffix.lower()]
    sha = hashlib.sha256(data).hexdigest()
    if kind == "pdf":
        captured = _read_pdf(p, data, sha)
    elif kind == "html":
        captured = _read_html(p, data, sha)
    else:
        captured = _read_text(p, data, sha, kind)
    if len(captured.source) > MAX_SOURCE:
        raise CaptureError(f"{p.name} holds {len(captured.source):,} characters of text; a node holds at most "
                           f"{MAX_SOURCE:,}, so nothing was imported (split the file first).")
    return captured


def _describe_type(p: Path) -> str:
    suffix = p.suffix.lower()
    if not suffix:
        return "a file without an extension"
    mime, _ = mimetypes.guess_type(p.name)
    return f"a {suffix} file" + (f" ({mime})" if mime else "")


def _read_text(p: Path, data: bytes, sha: str, kind: str) -> Captured:
    warnings: list[str] = []
    encoding = "utf-8"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    elif b"\x00" in data[:SNIFF_BYTES]:
        raise CaptureError(f"{p.name} looks like a binary file, not text (it holds NUL bytes); nothing was imported.")
    try:
        text = data.decode(encoding + ("-sig" if encoding == "utf-8" else ""))
    except UnicodeDecodeError as exc:
        text = data.decode(encoding + ("-sig" if encoding == "utf-8" else ""), errors="replace")
        bad = text.count("\ufffd")
        warnings.append(f"{bad:,} byte sequence{'s' if bad != 1 else ''} that {'were' if bad != 1 else 'was'} not "
                        f"valid {encoding.upper()} (the first at byte {exc.start:,}) replaced with �")
    if "\x00" in text:
        raise CaptureError(f"{p.name} looks like a binary file, not text (it holds NUL characters); "
                           "nothing was imported.")
    text = text.replace("\r\n", "\n")
    frontmatter = None
    title = ""
    if kind == "markdown":
        frontmatter, body, problem = _split_frontmatter(text)
        if problem:
            warnings.append(problem)
        if frontmatter is not None:
            text = body
            fm_title = frontmatter.get("title")
            if isinstance(fm_title, str):
                title = fm_title.strip()
        if not title:
            m = re.search(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", text, re.MULTILINE)
            title = m.group(1).strip() if m else ""
    if not title:
        title = title_from_text(text) if text.strip() else p.stem
    if not text.strip():
        raise CaptureError(f"{p.name} is empty; nothing was imported.")
    return Captured(str(p), kind, title[:500], text, sha, encoding, frontmatter=frontmatter, warnings=warnings)


def _read_html(p: Path, data: bytes, sha: str) -> Captured:
    """A saved web page or an HTML manual page: read as a fetched page is (core/capture/web.py: its
    charset from the page itself, its main text as markdown, its title)."""
    from core.capture import web

    if b"\x00" in data[:SNIFF_BYTES] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise CaptureError(f"{p.name} looks like a binary file, not a web page (it holds NUL bytes); nothing was imported.")
    html, charset = web.decode(data, None)
    page = web.Page(url=p.as_uri(), final_url=p.as_uri(), redirects=(), content_type="text/html", charset=charset,
                    html=html, size=len(data))
    try:
        found = web.extract(page)
    except web.CaptureError as exc:
        raise CaptureError(f"{p.name}: no text was found in it (only navigation, or a page built by "
                           "JavaScript); nothing was imported.") from exc
    title = found.title if found.title and found.title != page.final_url else p.stem
    warnings = []
    if bad := html.count("\ufffd"):
        warnings.append(f"{bad:,} byte sequence{'s' if bad != 1 else ''} not valid {charset.upper()} replaced with �")
    return Captured(str(p), "html", title[:500], found.text, sha, web.extractor_version(), warnings=warnings)


def _split_frontmatter(text: str) -> tuple[dict | None, str, str | None]:
    """(frontmatter, body, problem) of a markdown text that starts with a `---` YAML block."""
    m = re.match(r"\A---[ \t]*\n(.*?\n)?---[ \t]*(\n|\Z)", text, re.DOTALL)
    if not m:
        return None, text, None
    import yaml

    try:
        loaded = yaml.safe_load(m.group(1) or "")
    except yaml.YAMLError as exc:
        return None, text, f"the frontmatter is not valid YAML ({' '.join(str(exc).split())[:120]}); it was kept as text"
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return None, text, "the frontmatter is not a YAML mapping; it was kept as text"
    # dates and other YAML values as JSON can hold them
    return json.loads(json.dumps(loaded, default=str, ensure_ascii=False)), text[m.end():], None


def _read_pdf(p: Path, data: bytes, sha: str) -> Captured:
    from core.capture.pdf_reader import PdfRefused, read_pdf
    from core.capture.pdf_words import whole_words

    try:
        read = read_pdf(data)
    except PdfRefused as exc:
        raise CaptureError(f"{p.name} {exc}.") from exc
    count = len(read.pages)
    if count == 0:
        raise CaptureError(f"{p.name} has no pages; nothing was imported.")
    # guessed spaces mended, ligatures folded, line-end hyphenations joined: each page on its own
    texts = [_clean(t) for t in whole_words(read.pages, read.soft)]
    empty = [i + 1 for i, t in enumerate(texts) if not t.strip()]
    if len(empty) == count:
        raise CaptureError(f"{p.name} has no text layer ({count} page{'s' if count != 1 else ''}, none with text): "
                           "it may be a scan; nothing was imported (run OCR on it first, e.g. `ocrmypdf`).")
    warnings: list[str] = []
    textless = [n for n in empty if n not in read.unreadable]
    if textless:
        warnings.append(f"{_pages_label(textless)} no text (a scanned page or only images); left out")
    if read.unreadable:
        warnings.append(f"{_pages_label(read.unreadable)} could not be read; left out")
    starts, pos = [], 0
    for t in texts:
        starts.append(pos)
        pos += len(t) + len(PAGE_SEPARATOR)
    source = PAGE_SEPARATOR.join(texts)
    title = _info_title(read.title) or title_from_text(source)
    return Captured(str(p), "pdf", title[:500], source, sha, read.reader, pages=count, page_starts=starts,
                    warnings=warnings, outline=_outline_offsets(read.outline, texts, starts))


def _outline_offsets(outline: list[tuple[int, str, int]], texts: list[str], starts: list[int]) -> list[list]:
    """Each bookmark as [level, title, offset]: where its title is printed on its page (after the bookmark
    before it on that page), else the page's start. The chunker makes these a PDF's headings, the only
    ones it has (a line starting with `#` in a PDF is no heading)."""
    placed: list[tuple[int, bool, list]] = []
    after: dict[int, int] = {}  # page -> offset in that page's text where the next search starts
    for level, title, page in outline:
        if not 0 <= page < len(texts):
            continue
        words = [re.escape(w) for w in title.split()]
        found = re.compile(r"\s+".join(words), re.IGNORECASE).search(texts[page], after.get(page, 0)) if words else None
        offset = found.start() if found else 0
        if found:
            after[page] = found.end()
        placed.append((starts[page] + offset, bool(found), [level, title, starts[page] + offset]))
    # by offset; at one offset, a bookmark not printed (set at its page's start) before one printed there,
    # so the printed one heads the text; otherwise in the outline's order (a stable sort)
    placed.sort(key=lambda entry: entry[:2])
    return [entry for *_, entry in placed]


def _pages_label(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"page {numbers[0]} has"
    shown = ", ".join(str(n) for n in numbers[:10]) + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")
    return f"{len(numbers)} pages ({shown}) have"


def _clean(text: str) -> str:
    """Page text as the store takes it: no NUL, no lone surrogates, no trailing spaces on lines."""
    text = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")).strip()


def _info_title(title: str) -> str:
    """The document information's title, its padding gone (groff pads it); none when it is a placeholder."""
    title = " ".join(title.split())
    return "" if title.lower() in _JUNK_TITLES else title


# -- into the store -----------------------------------------------------------------------------
@dataclass
class FileOutcome:
    status: str  # created | updated | unchanged
    node: dict
    captured: Captured | None  # None when unchanged (the file was not parsed again)


def captured_paths(store: Store) -> dict[str, tuple[int, str]]:
    """{path: (node id, sha256)} of every node captured from a file."""
    rows = store.db.execute(
        "SELECT id, json_extract(metadata, '$.capture.path') AS path, json_extract(metadata, '$.capture.sha256') AS sha"
        " FROM nodes WHERE json_extract(metadata, '$.capture.path') IS NOT NULL ORDER BY id"
    ).fetchall()
    return {r["path"]: (r["id"], r["sha"]) for r in rows}


def capture_file(store: Store, path: str | Path, *, known: dict[str, tuple[int, str]] | None = None,
                 title: str | None = None, description: str = "", link: str | None = None,
                 event_date: str | None = None, dimensions: list[str] | None = None,
                 type: str = "note") -> FileOutcome:
    """Capture one file: a new node, the node of this path updated (its content changed), or unchanged.
    One transaction per file: a kill leaves the file either captured whole or not at all."""
    p, data = read_bytes(path)
    sha = hashlib.sha256(data).hexdigest()
    known = captured_paths(store) if known is None else known
    existing = known.get(str(p))
    if existing and existing[1] == sha:
        return FileOutcome("unchanged", store.get_node(existing[0]), None)
    captured = parse(p, data)
    meta: dict = {"capture": captured.capture_meta()}
    if captured.frontmatter:
        meta["frontmatter"] = captured.frontmatter
    if existing:
        node = store.get_node(existing[0])
        old = dict(node.get("metadata") or {})
        changes: dict = {"source": captured.source, "metadata": {**old, **meta}}
        # a title the user changed in Cairn is kept; one that came from the file follows the file
        if title or node["title"] == (old.get("capture") or {}).get("title"):
            changes["title"] = title or captured.title
        node = store.update_node(existing[0], origin=provenance.FILE, **changes)
        known[str(p)] = (node["id"], sha)
        return FileOutcome("updated", node, captured)
    node = store.add_node(title or captured.title, captured.source, description=description,
                          link=link or p.as_uri(), event_date=event_date, dimensions=dimensions or [],
                          type=type, metadata=meta, origin=provenance.FILE)
    known[str(p)] = (node["id"], sha)
    return FileOutcome("created", node, captured)


@dataclass
class FolderReport:
    folder: str
    files: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    pages: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (relative path, why)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"folder": self.folder, "files": self.files, "created": self.created, "updated": self.updated,
                "unchanged": self.unchanged, "pages": self.pages, "skipped": [list(s) for s in self.skipped],
                "warnings": [list(w) for w in self.warnings], "seconds": self.seconds}


OUTSIDE_FILE = "a link to a file outside the folder"
OUTSIDE_FOLDER = "a link to a folder outside the folder"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def folder_scan(folder: str | Path, suffixes: tuple[str, ...] = FOLDER_SUFFIXES
                ) -> tuple[list[Path], list[tuple[str, str]]]:
    """(the files capture_folder takes, sorted; the (relative path, why) of the links it leaves out).
    Hidden files and folders (.git, .obsidian …) are left out. Symbolic links never lead out of the
    folder: a linked file outside it is left out and listed, one inside it is taken once (not when
    the file it names is taken under its own path), and linked folders are listed, not entered."""
    root = Path(folder).expanduser().resolve()
    root_key = str(root)
    found: list[Path] = []
    links: list[tuple[str, Path]] = []
    skipped: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):  # (links to folders are not entered)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in dirnames:
            path = Path(dirpath) / name
            if path.is_symlink():
                target = os.path.realpath(path)
                why = (f"a link to the folder {Path(target).relative_to(root).as_posix()}/ in the folder (links to "
                       "folders are not followed)" if _inside(target, root_key) else OUTSIDE_FOLDER)
                skipped.append((path.relative_to(root).as_posix() + "/", why))
        for name in sorted(filenames):
            if not name.startswith(".") and name.lower().endswith(suffixes):
                path = Path(dirpath) / name
                if path.is_symlink():
                    links.append((path.relative_to(root).as_posix(), path))
                else:
                    found.append(path)
            elif not name.startswith(".") and not name.lower().endswith(MARKDOWN_SUFFIXES):
                path = Path(dirpath) / name
                skipped.append((path.relative_to(root).as_posix(), _not_read(path)))
    taken = {str(p) for p in found}
    for rel, path in sorted(links):
        target = os.path.realpath(path)
        if not _inside(target, root_key):
            skipped.append((rel, OUTSIDE_FILE))
        elif not target.lower().endswith(suffixes):
            skipped.append((rel, f"a link to {Path(target).relative_to(root).as_posix()}, which is not a PDF or "
                                 "text file"))
        elif target in taken:
            skipped.append((rel, f"a link to {Path(target).relative_to(root).as_posix()}, which is captured "
                                 "itself or through another link"))
        else:
            taken.add(target)
            found.append(path)
    return sorted(found), skipped


def _not_read(p: Path) -> str:
    """Why a file of a folder is not imported: its type."""
    mime, _ = mimetypes.guess_type(p.name)
    if mime and mime.split("/")[0] in ("image", "audio", "video"):
        return f"{_describe_type(p)}: attachments are not notes"
    return f"{_describe_type(p)}: not a type Cairn reads (markdown, PDF, text, HTML)"


def folder_files(folder: str | Path, suffixes: tuple[str, ...] = FOLDER_SUFFIXES) -> list[Path]:
    """The files capture_folder takes, sorted (see folder_scan)."""
    return folder_scan(folder, suffixes)[0]


def capture_folder(store: Store, folder: str | Path, progress: Progress | None = None,
                   on_file: Callable[[str, str, str], None] | None = None) -> FolderReport:
    """Capture every PDF, text and HTML file under folder (markdown is the vault import's). progress(done,
    total) after each file; on_file(relative path, status, detail) for each, status one of created,
    updated, unchanged, skipped. A file that cannot be captured is skipped with its reason, and so is
    each symbolic link folder_scan leaves out (a link out of the folder is never followed)."""
    started = time.monotonic()
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise CaptureError(f"{root} is not a folder.")
    files, links = folder_scan(root)
    report = FolderReport(str(root), files=len(files), skipped=list(links))
    known = captured_paths(store)
    if progress:
        progress(0, len(files))
    for done, path in enumerate(files, start=1):
        rel = path.relative_to(root).as_posix()
        try:
            if not _inside(os.path.realpath(path), str(root)):  # swapped for a link since the scan
                raise CaptureError(f"{rel} is {OUTSIDE_FILE}; nothing was imported.")
            outcome = capture_file(store, path, known=known)
        except InvalidInput as exc:  # CaptureError, or the store refusing the node (each says why)
            report.skipped.append((rel, str(exc)))
            status, detail = "skipped", str(exc)
        else:
            status = outcome.status
            setattr(report, status, getattr(report, status) + 1)
            captured = outcome.captured
            detail = ""
            if captured is not None:
                report.pages += captured.pages or 0
                report.warnings.extend((rel, w) for w in captured.warnings)
                detail = f"{captured.pages} page{'s' if captured.pages != 1 else ''}" if captured.pages else ""
        if on_file:
            on_file(rel, status, detail)
        if progress:
            progress(done, len(files))
    report.seconds = round(time.monotonic() - started, 3)
    return report
