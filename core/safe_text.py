"""Make untrusted text safe to show in a terminal: note text, and everything a model or a provider says
(replies, tool calls, titles, notices, error messages). Escape sequences and bidi controls are rendered
as visible code points instead of being interpreted.

Every control is escaped on its own, so text streamed in pieces is safe piece by piece: an escape
sequence split across two deltas is two harmless fragments (`\\u001b` in one, `]52;…` in the next).
A carriage return is escaped too (it would send the cursor to the line start and let what follows
overwrite what the reader saw), except in a Windows line ending, which becomes a plain newline; a
`\\r\\n` split across two deltas shows as a visible `\\u000d` and a newline, which is harmless.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, C1 controls, and the Unicode bidi overrides/isolates.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every unsafe character as a visible `\\uXXXX` (tab and newline kept)."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text.replace("\r\n", "\n"))
