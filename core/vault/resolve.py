"""How a link's target finds its note (`Resolver`), as in Obsidian.

By file name (case-insensitive, with or without folder path or `.md`; the nearest when several
match), then by alias, then by title. A link naming a non-markdown file (image, pdf ...) or another
file in the folder is an attachment, not unresolved.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from typing import Iterable

from core.vault.parse import NOTE_SUFFIXES

# What Obsidian treats as attachments (not notes) when a link names them.
ATTACHMENT_EXTS = frozenset(
    "png jpg jpeg gif bmp svg webp avif heic heif tif tiff ico mp3 wav m4a ogg oga flac 3gp webm mp4 m4v mov mkv "
    "ogv avi pdf canvas base zip gz tar 7z rar doc docx xls xlsx ppt pptx odt ods odp csv tsv json txt html htm "
    "xml epub js css py sh".split()
)


def _strip_suffix(name: str) -> str:
    low = name.lower()
    for suffix in NOTE_SUFFIXES:
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


class Resolver:
    """Obsidian's rules: file name (case-insensitive; a path when one is given), then alias, then title.

    It can be kept up to date note by note (`add`, `remove`), and tells which keys a link's
    resolution looked up (`resolve(..., deps)`) and which keys a note answers to (`provides`): when
    the notes answering to a key change, only the links that looked it up can resolve differently."""

    def __init__(self, notes: Iterable[tuple[str, str, list[str]]], other_files: set[str]):
        """`notes`: (path, title, aliases) of every note; `other_files`: the folder's other file names."""
        self.by_path: dict[str, list[str]] = defaultdict(list)
        self.by_stem: dict[str, list[str]] = defaultdict(list)
        self.by_alias: dict[str, list[str]] = defaultdict(list)
        self.by_title: dict[str, list[str]] = defaultdict(list)
        for rel, title, aliases in notes:
            self.add(rel, title, aliases)
        self.other_files = other_files

    def add(self, rel: str, title: str, aliases: Iterable[str]) -> None:
        key = _strip_suffix(rel).lower()
        self.by_path[key].append(rel)
        self.by_stem[posixpath.basename(key)].append(rel)
        for alias in aliases:
            self.by_alias[alias.lower()].append(rel)
        self.by_title[title.lower()].append(rel)

    def remove(self, rel: str, title: str, aliases: Iterable[str]) -> None:
        key = _strip_suffix(rel).lower()
        entries = [(self.by_path, key), (self.by_stem, posixpath.basename(key)), (self.by_title, title.lower())]
        entries += [(self.by_alias, alias.lower()) for alias in aliases]
        for table, k in entries:
            found = table.get(k)
            if found and rel in found:
                found.remove(rel)
                if not found:
                    del table[k]  # `key in table` must mean "some note answers to it"

    @staticmethod
    def provides(rel: str, title: str, aliases: Iterable[str]) -> set[tuple[str, str]]:
        """The lookup keys a note answers to: its file name (stem) and its title and aliases (names)."""
        keys = {("stem", posixpath.basename(_strip_suffix(rel).lower())), ("name", title.lower())}
        keys.update(("name", alias.lower()) for alias in aliases)
        return keys

    @staticmethod
    def _parse(target: str) -> tuple[str, str]:
        t = target.strip().replace("\\", "/")
        while t.startswith("./"):
            t = t[2:]
        t = t.lstrip("/")
        return t, _strip_suffix(t).lower()

    @staticmethod
    def _best(candidates: list[str], source_rel: str) -> str:
        folder = posixpath.dirname(source_rel)
        return min(candidates, key=lambda r: (posixpath.dirname(r) != folder, r.count("/"), r))

    def resolve(self, target: str, source_rel: str, deps: set | None = None) -> tuple[str, str | None]:
        """('note', rel) | ('attachment', None) | ('unresolved', None). `deps`, if given, gets every key
        looked up on the way, as `provides` names them: the answer can change only when the notes
        answering to one of them change (or, for ("file", name), the folder's other files)."""
        t, key = self._parse(target)
        if not t:
            return "unresolved", None
        if "/" in key:
            relative = posixpath.normpath(posixpath.join(posixpath.dirname(source_rel.lower()), key))
            for candidate in (posixpath.normpath(key), relative):
                if deps is not None:
                    deps.add(("stem", posixpath.basename(candidate)))
                if candidate in self.by_path:
                    return "note", min(self.by_path[candidate])
            if deps is not None:
                deps.add(("stem", posixpath.basename(key)))
            tail = "/" + key
            suffixed = [r for r in self.by_stem.get(posixpath.basename(key), [])
                        if ("/" + _strip_suffix(r).lower()).endswith(tail)]
            if suffixed:
                return "note", self._best(suffixed, source_rel)
        else:
            if deps is not None:
                deps.add(("stem", key))
            if key in self.by_stem:
                return "note", self._best(self.by_stem[key], source_rel)
        for table in (self.by_alias, self.by_title):
            for k in (t.lower(), key):
                if deps is not None:
                    deps.add(("name", k))
                if k in table:
                    return "note", self._best(table[k], source_rel)
        name = posixpath.basename(t.lower())
        if deps is not None:
            deps.add(("file", name))
        ext = posixpath.splitext(t.lower())[1].lstrip(".")
        if ext in ATTACHMENT_EXTS or name in self.other_files:
            return "attachment", None
        return "unresolved", None
