"""A dialog's save takes every key typed before it (issue 26 walkthrough).

A priority binding (ctrl+s in quick capture, the journal entry, a merge, a review's edit) runs as
the app reads its key. The keys read before it have been handed to the focused field, but that
field handles them on its own turn of the loop (Textual gives each widget a message queue), so in
a burst (a fast typist, a paste, a laggy SSH link: one read brings the letters and ctrl+s) the save
read the fields without their last letters and closed the dialog, dropping them. The save awaits
`typed_keys_handled(screen)` first: until no widget of the screen has a message waiting, at most
AT_MOST seconds (a stuck widget does not stop the save; what it holds is what is lost).
"""

from __future__ import annotations

import asyncio
import time

from tui.key_handoff import queues_empty

AT_MOST = 1.0  # seconds


async def typed_keys_handled(screen) -> None:
    deadline = time.monotonic() + AT_MOST
    # the screen itself is left out: a save may run on its turn
    while not queues_empty(screen, with_self=False) and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
