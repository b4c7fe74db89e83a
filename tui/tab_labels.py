"""The Focus tabs' labels: each title shortened to TAB_LABEL_WIDTH cells, and open tabs whose titles
would shorten to the same label show where they differ instead (issue 26: two "Sourdough starter
feedi…" tabs side by side just before a merge).

The rule: a title that fits is its own label; a longer one is cut at a word with an ellipsis
(tui/fit_text.shorten). When two or more different titles get the same label, each of them is
labelled from the word before the first word where they differ, led by an ellipsis:
"Sourdough starter feeding schedule" / "Sourdough starter feeding log" → "…feeding schedule" /
"…feeding log". Titles without spaces there (a long word, Japanese) are labelled from a few
characters before the difference. Titles that are the same are labelled the same.
"""

from __future__ import annotations

import os

from tui.fit_text import ELLIPSIS, shorten

TAB_LABEL_WIDTH = 24  # cells; about three labels side by side in the Focus pane at 80 columns
CONTEXT_CHARACTERS = 3  # shown before the difference when no word boundary comes before it


def _tail_starts(titles: list[str]) -> list[int]:
    """Where the distinguishing end of these titles may start, best first: the word before the first
    word that differs (for context), then a few characters before the first character that differs."""
    prefix = os.path.commonprefix(titles)
    at = len(prefix)
    if all(len(t) == at or t[at] == " " for t in titles):
        differing = at  # the shared words are whole: the difference starts with the next word
    else:
        differing = prefix.rfind(" ") + 1  # inside a word: from that word's start
    before = prefix[:differing].rstrip()
    by_word = before.rfind(" ") + 1 if before else 0
    return [start for start in (by_word, max(0, at - CONTEXT_CHARACTERS)) if start]


def _clashes(names: list[str], labels: list[str]) -> list[list[str]]:
    """The groups of different titles that share a label."""
    by_label: dict[str, set[str]] = {}
    for name, label in zip(names, labels):
        by_label.setdefault(label, set()).add(name)
    return [sorted(group) for group in by_label.values() if len(group) > 1]


def tab_labels(titles: list[str], width: int = TAB_LABEL_WIDTH) -> list[str]:
    """A label for each open tab's title, in the same order."""
    names = [" ".join(title.split()) or "Untitled" for title in titles]
    labels = [shorten(name, width) for name in names]
    hopeless: set[str] = set()  # titles no start tells apart within the width
    # Each round labels every clashing group from where its titles differ; a group that splits only
    # partly leaves smaller groups with a longer shared start, which the next round tells apart.
    for _ in range(len(names)):
        groups = [g for g in _clashes(names, labels) if not hopeless.issuperset(g)]
        if not groups:
            break
        for group in groups:
            for start in _tail_starts(group):
                ends = {name: ELLIPSIS + shorten(name[start:], width - len(ELLIPSIS)) for name in group}
                if len(set(ends.values())) > 1:
                    labels = [ends.get(name, label) for name, label in zip(names, labels)]
                    break
            else:
                hopeless.update(group)
    return labels
