"""The egress rule: when the model may send anything to a network address (ARCHITECTURE.md, "Egress").

A tool that fetches an address sends whatever the address holds (its path, its query string) to that
address's host. A model steered by text a stranger wrote can put the user's notes there
(`https://host/c?d=<a note's text>`). So, for the model and its delegates:

1. An address the user wrote themselves in this chat (the same URL, or it without its #fragment; both
   normalised as a capture normalises them) is fetched without asking: the user asked for it.
2. Once this chat has shown the model a note that `privacy.never_send` hides (a local model sees them),
   no other address is fetched at all, asked or not: its text could ride in the address.
3. Any other address is fetched only when the user allows it, seeing the whole URL (the app asks in a
   dialog; `cairn ask` asks at the terminal and refuses without one; `--yes` covers edits, not this:
   only `--allow-fetch` does). With nobody to ask, it is refused.

An MCP client keeps its own rule: it asks its user before a tool marked open-world runs (captureUrl is),
so `Egress.for_mcp()` lets the call through. Every path that fetches for the model asks `check()` here
and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from core.errors import CairnError

# An address as people write it in a message: http(s) up to whitespace or an angle bracket / quote; or,
# as `cairn add --url` takes it, a host name without the scheme (example.org/post, www.example.org).
_URL = re.compile(r"https?://[^\s<>\"'`]+", re.IGNORECASE)
_BARE = re.compile(r"(?<![\w@/.:-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}(?::\d+)?(?:/[^\s<>\"'`]*)?",
                   re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\""


class EgressRefused(CairnError):
    """The model asked to send something to an address the rule does not allow; nothing was sent."""


def addresses_in(text: str) -> list[str]:
    """The http(s) addresses a message names, as written (trailing punctuation and an unmatched
    closing bracket left out: "see (https://x.org/a)." names https://x.org/a)."""
    out = []
    text = text or ""
    found = [m.group() for m in _URL.finditer(text)]
    found += [m.group() for m in _BARE.finditer(_URL.sub(" ", text))]
    for url in found:
        while url and url[-1] in _TRAILING:
            if url[-1] in ")]}" and url.count(url[-1]) <= url.count({")": "(", "]": "[", "}": "{"}[url[-1]]):
                break  # a bracket the address itself opened: part of it (Wikipedia's "Foo_(bar)")
            url = url[:-1]
        if url:
            out.append(url)
    return out


def on_the_wire(url: str) -> tuple[str, str]:
    """(host, address) as the request will carry them, for the question the user is asked: the host in
    its ASCII form (a look-alike letter shows as xn--…) and every other byte percent-encoded, so nothing
    invisible rides along unseen. An address that cannot be normalised is shown as it is (its fetch fails)."""
    from urllib.parse import urlsplit

    wire = _normalised(url)
    if wire is None:
        return "", url
    return urlsplit(wire).hostname or "", wire


def _normalised(url: str) -> str | None:
    from core.capture.web import CaptureError, normalise_url  # normalise_url drops the fragment

    try:
        return normalise_url(url)
    except CaptureError:
        return None


@dataclass
class Egress:
    """The rule for one chat turn (shared with its delegates). `user_texts`: what the user wrote in this
    chat; `hidden_seen`: the never_send dimensions of notes the model has been shown in this chat so
    far (asked at each fetch: a tool may have just read one); `ask`: the user's answer for an address
    they did not write (None: nobody to ask, refused); `client_asks`: an MCP client's own confirmation."""

    user_texts: Iterable[str] = ()
    ask: Callable[[str], bool] | None = None
    hidden_seen: Callable[[], list[str]] = field(default=lambda: [])
    client_asks: bool = False
    _written: frozenset[str] | None = field(default=None, init=False, repr=False)

    @classmethod
    def for_mcp(cls) -> "Egress":
        return cls(client_asks=True)

    def written_by_user(self, url: str) -> bool:
        if self._written is None:
            self._written = frozenset(n for text in self.user_texts for u in addresses_in(text)
                                      if (n := _normalised(u)) is not None)
        n = _normalised(url)
        return n is not None and n in self._written

    def check(self, url: str) -> None:
        """Return when the model may fetch `url`; raise EgressRefused (one sentence for the model and
        the user) when not."""
        if self.client_asks or self.written_by_user(url):
            return
        hidden = self.hidden_seen()
        if hidden:
            raise EgressRefused(
                f"Not fetched: {url} is not an address the user wrote, and this chat has shown the model notes "
                f"marked never_send ({', '.join('#' + d for d in sorted(hidden))}); in such a chat only addresses "
                "the user writes in a message are fetched, so those notes cannot leave inside one.")
        if self.ask is None:
            raise EgressRefused(
                f"Not fetched: {url} is not an address the user wrote in this chat, and fetching it needs their "
                "confirmation, which cannot be asked here (cairn ask: run it in a terminal, or pass --allow-fetch "
                "to allow fetches the user did not write).")
        if not self.ask(url):
            raise EgressRefused(f"Not fetched: the user did not allow fetching {url}.")
