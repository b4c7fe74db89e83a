"""`cairn add --url URL`: a web page's main text as a node (core/capture/web.py does the work).

Importing this module imports core.capture.web, which also gives the chat's and the MCP server's
captureUrl tool its implementation; tui/cli/nodes.py imports it, so every `cairn` process has it.
"""

from __future__ import annotations

import sys

from core.capture import web
from core.errors import InvalidInput
from core.safe_text import printable
from tui.cli.common import Out, open_store


def add_url(args, out: Out) -> int:
    """Fetch args.url and store it; an address captured before prints that node instead (--again forces)."""
    if args.text is not None:
        raise InvalidInput("--url takes the note's text from the page; leave out TEXT (or drop --url).")
    if args.link:
        raise InvalidInput("--url is the note's link; leave out --link.")

    def progress(text: str) -> None:
        if not out.as_json and sys.stderr.isatty():
            print(f"\r\x1b[2K{text}", end="", file=sys.stderr, flush=True)

    try:
        with open_store(args) as store:
            result = web.capture(store, args.url, again=args.again, title=args.title, description=args.description,
                                 event_date=args.event_date, dimensions=args.dimension or [], type=args.type,
                                 progress=progress)
    finally:
        if not out.as_json and sys.stderr.isatty():
            print("\r\x1b[2K", end="", file=sys.stderr, flush=True)
    node = result.node
    if out.as_json:
        out.json({**node, "already_captured": result.existing})
        return 0
    print(node["id"])  # stdout is the id either way, so `id=$(cairn add --url …)` works
    if result.existing:
        note = (f"{args.url} was captured before as node {node['id']} ({node['title']!r}); nothing new was saved "
                "(--again captures it anew).")
    else:
        cap = result.capture
        facts = [f"{len(node['source']):,} characters from {cap['final_url']}"]
        facts += [v for v in (cap.get("author"), cap.get("site"), cap.get("date")) if v]
        note = f"Captured {node['title']!r}: " + " · ".join(facts) + "."
    print(printable(note), file=sys.stderr)
    return 0
