"""Text cut to fit a width on purpose: at a word, with an ellipsis that says something was left out.

Widths are terminal cells (rich.cells.cell_len), so wide characters count twice. Pure functions; no
widget here (the Focus tab labels in tui/tab_labels.py, the neighbourhood's edge line in
tui/screens/neighbourhood.py).
"""

from __future__ import annotations

from rich.cells import cell_len

ELLIPSIS = "…"
WORD_CUT_KEEPS = 2 / 3  # a cut at a word must keep this much of the room, else it cuts inside the word


def _head(text: str, width: int) -> str:
    """The longest start of `text` that takes at most `width` cells."""
    used = 0
    for i, ch in enumerate(text):
        used += cell_len(ch)
        if used > width:
            return text[:i]
    return text


def shorten(text: str, width: int) -> str:
    """`text` on one line of `width` cells: whole if it fits, else cut at the last word boundary that
    keeps most of the room (else inside the word) and ended with an ellipsis."""
    text = " ".join(text.split())
    if cell_len(text) <= width:
        return text
    if width < 1:
        return ""
    head = _head(text, width - 1)
    space = head.rfind(" ")
    if space > 0 and cell_len(head[:space]) >= (width - 1) * WORD_CUT_KEEPS:
        head = head[:space]
    return head.rstrip() + ELLIPSIS


def wrap(text: str, width: int) -> list[str]:
    """`text` wrapped at spaces into lines of at most `width` cells; a word longer than a line is split."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        while cell_len(word) > width:  # a word that cannot fit any line: split it at the width
            if line:
                lines.append(line)
                line = ""
            piece = _head(word, width) or word[0]
            lines.append(piece)
            word = word[len(piece):]
        if not word:
            continue
        if line and cell_len(line) + 1 + cell_len(word) <= width:
            line += " " + word
        else:
            if line:
                lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def clip_lines(text: str, width: int, max_lines: int) -> list[str]:
    """`text` wrapped to `width` in at most `max_lines` lines; when more were needed, the last line
    ends at a whole word with an ellipsis."""
    lines = wrap(text, width)
    if len(lines) <= max_lines or max_lines < 1:
        return lines[:max(max_lines, 0)]
    kept = lines[:max_lines]
    last = kept[-1]
    while cell_len(last) + cell_len(ELLIPSIS) > width and " " in last:
        last = last.rsplit(" ", 1)[0]  # give back the last word, never half of it
    if cell_len(last) + cell_len(ELLIPSIS) > width:
        last = _head(last, width - 1)  # a single word filling the line
    kept[-1] = last.rstrip() + ELLIPSIS
    return kept
