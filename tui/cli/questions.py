"""The model's questions to the user during `cairn ask` (an edit to confirm, an address to fetch),
asked on the main thread: the reply streams in a worker thread, and a question asked there would race
the streamed lines, ignore Ctrl-C and, with stdout redirected, wait unseen. Questions go to stderr and
are read from stdin; only with both on a terminal is anyone there to answer."""

from __future__ import annotations

import json
import queue
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable

from core.safe_text import printable


@dataclass
class Question:
    """One question on its way from the worker to the main thread, and its answer on the way back."""

    text: str
    answered: threading.Event = field(default_factory=threading.Event)
    answer: bool = False


class Questions:
    def __init__(self, events: queue.Queue, cancel: threading.Event, *, yes: bool, allow_fetch: bool):
        self.events, self.cancel = events, cancel
        self.yes, self.allow_fetch = yes, allow_fetch
        self.at_terminal = sys.stdin.isatty() and sys.stderr.isatty()

    # -- the callbacks the chat calls (on the worker thread) ------------------------------------------
    def confirm(self, action: str, detail: dict) -> bool:
        """An edit: --yes answers yes; else asked at a terminal, refused without one."""
        if self.yes:
            return True
        if not self.at_terminal:
            return False
        return self._ask(f"The model wants to {action}:\n{json.dumps(detail, ensure_ascii=False)}\nAllow it? [y/N] ")

    @property
    def confirm_fetch(self) -> Callable[[str], bool] | None:
        """The egress rule's question (core/agent/egress.py); --yes does not answer it, --allow-fetch
        does; None (refused) with nobody at a terminal to ask."""
        if self.allow_fetch:
            return lambda url: True
        return self._fetch if self.at_terminal else None

    def _fetch(self, url: str) -> bool:
        from core.agent.egress import on_the_wire

        host, wire = on_the_wire(url)
        return self._ask(f"The model wants to fetch a page from {host or 'an unknown host'}, at an address you did "
                         f"not write:\n  {wire}\nWhatever is in it (its path, its query string) goes to that server. "
                         "Allow it? [y/N] ")

    def _ask(self, text: str) -> bool:
        question = Question(text)
        self.events.put(question)
        while not question.answered.wait(0.1):
            if self.cancel.is_set():
                return False
        return question.answer and not self.cancel.is_set()

    # -- on the main thread ---------------------------------------------------------------------------
    def answer(self, question: Question) -> None:
        """Print the question (after what was streamed so far) and read the answer; Ctrl-C or Ctrl-D is a
        no, and Ctrl-C also stops the turn."""
        sys.stdout.flush()
        sys.stderr.write("\n" + printable(question.text))
        sys.stderr.flush()
        try:
            line = sys.stdin.readline()
        except KeyboardInterrupt:
            self.cancel.set()
            line = ""
        question.answer = line.strip().lower() in ("y", "yes")
        question.answered.set()
