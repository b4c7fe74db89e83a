"""`--accept N,N` for the verbs that print a numbered list and write the chosen items on a second run
(`cairn distil`, `cairn integrate`, `cairn links`); the list itself is kept by core.graph.shown_lists."""

from __future__ import annotations

from core.errors import InvalidInput


def accept_numbers(text: str) -> list[int]:
    """The numbers in "1,3" in the order given, each once; anything else is a clear error."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise InvalidInput(f"--accept takes proposal numbers such as 1,3; {part!r} is not one.")
        out.append(int(part))
    if not out:
        raise InvalidInput("--accept takes proposal numbers such as 1,3.")
    return list(dict.fromkeys(out))
