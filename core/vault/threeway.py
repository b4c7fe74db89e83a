"""The three-way merge of a vault note: its body by lines, its frontmatter field by field.

`base` is the version Cairn and the file last agreed on, `ours` is Cairn's version now, `theirs` is
the file's. Edits that do not overlap are merged; where they do, the file's version wins whole and
the caller keeps Cairn's as a visible conflict (issue 23, item 4). Pure: no I/O, no store.

The body is merged with `merge3` (Breezy's diff3), on lines as they are in the text: a line keeps its
ending (`\\n` or `\\r\\n`), so the merged text has exactly the bytes the two sides wrote. A missing
final newline is a line of its own: the last line is given the texts' line ending and an empty
marker follows it, so appending to a note that has none is not also an edit of its last line.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import merge3

# After the last line of a text that does not end in a newline (that line is given one). Every line
# ends in "\n", so the empty string can be nothing else, and it adds nothing when joined.
_NO_FINAL_NEWLINE = ""
_ABSENT = object()  # a frontmatter key one side does not have


@dataclass(frozen=True)
class TextMerge:
    """A merged body: the merge when clean, else the file's version (`theirs`), which wins."""

    text: str
    clean: bool
    conflicts: int  # regions both sides changed differently


@dataclass(frozen=True)
class FieldMerge:
    """Merged frontmatter: each conflicting key holds the file's value and is named in `conflicts`."""

    fields: dict[str, Any]
    conflicts: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not self.conflicts


class _LineMatcher(difflib.SequenceMatcher):
    """difflib without its "autojunk" heuristic, which merge3 leaves on: in a note of 200 lines or
    more a line that is over 1 % of them (a blank line) cannot anchor a match, and two edits with
    only blank lines between them read as one change, a conflict that is not there."""

    def __init__(self, isjunk: Any = None, a: Sequence[str] = "", b: Sequence[str] = "", autojunk: bool = False) -> None:
        super().__init__(isjunk, a, b, autojunk=False)


def merge_text(base: str, ours: str, theirs: str) -> TextMerge:
    """Merge Cairn's body (`ours`) and the file's (`theirs`) against the one both last agreed on."""
    if ours == base or ours == theirs:
        return TextMerge(theirs, True, 0)
    if theirs == base:
        return TextMerge(ours, True, 0)
    eol = _line_ending(base, ours, theirs)
    lb, lo, lt = (_lines(text, eol) for text in (base, ours, theirs))
    merged: list[str] = []
    conflicts = 0
    for region in merge3.Merge3(lb, lo, lt, sequence_matcher=_LineMatcher).merge_regions():
        kind = region[0]
        if kind == "unchanged":
            merged += lb[region[1]:region[2]]
        elif kind in ("a", "same"):
            merged += lo[region[1]:region[2]]
        elif kind == "b":
            merged += lt[region[1]:region[2]]
        else:  # "conflict": base, a and b ranges
            conflicts += 1
    if conflicts:
        return TextMerge(theirs, False, conflicts)
    return TextMerge(_text(merged, eol), True, 0)


def merge_fields(base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> FieldMerge:
    """Merge frontmatter key by key: a key one side changed, added or removed takes that side's value;
    changed on both to different values it keeps the file's and is a conflict. Keys come in the file's
    order, then the ones only Cairn added, in Cairn's order.

    Values compare as YAML values: `1`, `1.0` and `true` differ (Python's == says they are equal, and a
    change between them would be lost), NaN equals NaN (else an untouched `.nan` would conflict).
    """
    merged: dict[str, Any] = {}
    conflicts: list[str] = []
    keys = [*theirs, *(k for k in ours if k not in theirs), *(k for k in base if k not in theirs and k not in ours)]
    for key in keys:
        b, o, t = (side.get(key, _ABSENT) for side in (base, ours, theirs))
        if _same(o, b) or _same(o, t):
            value = t
        elif _same(t, b):
            value = o
        else:
            value = t
            conflicts.append(key)
        if value is not _ABSENT:
            merged[key] = value
    return FieldMerge(merged, tuple(conflicts))


def _line_ending(*texts: str) -> str:
    """The ending given to a last line that has none: the first one the texts use (one for all
    three, so that "last" in one text and "last\\r\\n" in another are the same line)."""
    for text in texts:
        at = text.find("\n")
        if at >= 0:
            return "\r\n" if text[at - 1:at] == "\r" else "\n"
    return "\n"


def _lines(text: str, eol: str) -> list[str]:
    """The text's lines, each with its ending; a last line without one gets `eol` and the marker."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines += [parts[-1] + eol, _NO_FINAL_NEWLINE]
    return lines


def _text(lines: list[str], eol: str) -> str:
    text = "".join(lines)
    # The marker ends every side that has it, so in a merge it can only come last, after the line
    # that was given `eol`.
    if lines and lines[-1] == _NO_FINAL_NEWLINE and text.endswith(eol):
        return text[: -len(eol)]
    return text


def _same(a: Any, b: Any) -> bool:
    """Equal as YAML values: == with the types too, NaN equal to itself, mappings in any order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b
