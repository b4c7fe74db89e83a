"""Waiting helpers shared by the Pilot tests (not a test module): poll with a generous timeout, never
assert how fast something happened."""

from __future__ import annotations

import time

from textual.worker import WorkerCancelled


async def settle(app, pilot) -> None:
    """Let messages and workers finish (the database watcher runs for ever, so it is left out)."""
    for _ in range(200):
        await pilot.pause()
        busy = [w for w in app.workers if w.group != "watch" and not w.is_finished]
        if not busy:
            await pilot.pause()
            return
        try:
            await app.workers.wait_for_complete(busy)
        except WorkerCancelled:
            pass  # an exclusive worker superseded by a newer one (index_pending): look again
    raise AssertionError("workers did not settle")


async def wait_for(pilot, condition, timeout: float = 10.0, what: str = "condition"):
    """Poll until the condition holds (a generous timeout, never an assertion about speed)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)
