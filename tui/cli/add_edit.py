"""`cairn add --edit`: a new note written in $VISUAL / $EDITOR, as N does in the app.

The editor opens a file under the data folder's tmp/ that starts as core/capture/editor_note.py's
template (the options given, such as --title and -d, already in its frontmatter); what it leaves is read
by the same module. Nothing written (an empty or unchanged file): nothing saved, exit 1, and the file
is removed. An editor that exits with a failure, a file that is not UTF-8, a frontmatter that cannot
be taken, or a save that fails: nothing saved, exit 1, and the file is kept, its path in the message.
"""

from __future__ import annotations

import shlex
import subprocess

from core.capture import editor_note
from core.errors import CairnError, InvalidInput
from core.paths import editor_file
from tui.cli.common import Out, UsageError, decode, editor, open_store


def add_in_editor(args, out: Out) -> int:
    if args.url or args.again:
        raise UsageError("--edit writes a new note; it does not go with --url or --again.")
    if args.text is not None:
        raise UsageError("--edit starts from an empty note: leave out TEXT and write the text in the editor.")
    command = editor()
    if not command:
        raise InvalidInput("Set $VISUAL or $EDITOR to write the note in your editor; nothing was saved.")
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InvalidInput(f"Cannot read $VISUAL / $EDITOR ({exc}); nothing was saved.") from None
    handed = editor_note.template(args.title or "", dimensions=args.dimension or [],
                                  description=args.description or "", link=args.link, event_date=args.event_date)
    path = editor_file("cairn-new-", handed)
    kept = f" Your text is kept in {path}"
    try:
        status = subprocess.run([*argv, str(path)]).returncode
    except OSError as exc:  # the editor is not installed, not executable ...
        path.unlink(missing_ok=True)
        raise InvalidInput(f"Could not run the editor {argv[0]!r}: {exc}; nothing was saved.") from None
    if status != 0:
        text = path.read_bytes().decode("utf-8", "replace")
        if text.strip() == handed.strip():
            path.unlink()
            raise CairnError(f"The editor exited with status {status}; nothing was saved.")
        raise CairnError(f"The editor exited with status {status}; nothing was saved.{kept}")
    try:
        note = editor_note.read(decode(path.read_bytes(), "The file the editor left"), handed)
        if note is None:
            path.unlink()
            raise CairnError("Nothing was written in the editor, so no note was saved.")
        with open_store(args) as store:
            node = store.add_node(note.title, note.source, description=note.description, link=note.link,
                                  event_date=note.event_date, dimensions=note.dimensions, type=args.type)
    except CairnError as exc:
        if path.exists():
            raise CairnError(f"{exc}{kept}") from None
        raise
    path.unlink()
    if out.as_json:
        out.json(node)
    else:
        print(node["id"])
    return 0
