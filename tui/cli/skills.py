"""`cairn skills`: list, show, create and edit skills (core/agent/skills.py).

Skills live in `skills/` beside the config file. Editing a shipped skill first copies it there (the
copy overrides the shipped one by name); an edit that is no longer a valid skill is not saved over the
skill but kept beside it as `NAME.md.rejected`, so nothing typed is lost.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from core.errors import CairnError, InvalidInput
from core.safe_text import printable
from tui.cli.common import Out, UsageError, Verbs, decode, edited_in_editor, editor


def _warn(catalog) -> None:
    for warning in catalog.warnings:
        print(f"cairn: warning: {printable(warning)}", file=sys.stderr)


def _origin(skill) -> str:
    return "user (overrides shipped)" if skill.overrides else skill.origin


def _write(path: Path, text: str) -> None:
    """Write through a temp file in the same folder, so a crash never leaves half a skill."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _edit_and_save(text: str, path: Path) -> bool:
    """Hand `text` to $VISUAL/$EDITOR; save it at `path` if it is still a valid skill.
    Returns False when nothing changed. An invalid edit is kept as PATH.rejected and reported."""
    from core.agent import skills

    with edited_in_editor(text) as edited:
        if edited == text:
            return False
        try:
            skills.parse(edited, path)
        except InvalidInput as exc:
            refused = exc
            rejected = path.with_name(path.name + ".rejected")
            _write(rejected, edited)  # kept there, so the editor's file can go
        else:
            _write(path, edited)
            return True
    raise CairnError(f"The edit is not a valid skill ({refused}); it was not saved as the skill, and is kept in "
                     f"{rejected}.")


def cmd_skills(args, out: Out) -> int:
    from core.agent import skills

    action = args.action
    if action != "list" and not args.name:
        raise UsageError(f"Usage: cairn skills {action} NAME.")
    if action == "list" and args.name:
        raise UsageError(f"Usage: cairn skills [list] (to see one skill: cairn skills show {args.name}).")
    catalog = skills.load()
    _warn(catalog)
    folder = skills.user_dir()

    if action == "list":
        if out.as_json:
            out.json([s.as_dict() for s in catalog.skills.values()])
            return 0
        out.text(f"skills folder: {folder}" + ("" if folder.is_dir() else " (not created yet)"), style="dim")
        for s in catalog.skills.values():
            out.text((s.name, "bold"), f"  {s.description}")
            out.text((f"  {_origin(s)} · {s.path}", "dim"))
        return 0

    if action == "show":
        skill = catalog.get(args.name)
        if out.as_json:
            out.json(skill.as_dict() | {"instructions": skill.instructions})
        else:
            out.text((skill.name, "bold"), f"  {skill.description}")
            out.text((f"{_origin(skill)} · {skill.path}", "dim"))
            out.text("")
            out.text(skill.instructions)
        return 0

    name = skills.check_name(args.name)
    path = folder / f"{name}.md"

    if action == "new":
        if path.exists():
            raise InvalidInput(f"The skill {name} already exists ({path}); edit it with: cairn skills edit {name}.")
        shipped = catalog.skills.get(name)
        if shipped is not None and shipped.origin == "shipped":
            raise InvalidInput(f"Cairn ships a skill named {name}; to change it run: cairn skills edit {name} "
                               "(your copy will override the shipped one).")
        text = skills.template(name)
        if args.description is not None:
            description = " ".join(args.description.split())
            if not description:
                raise InvalidInput("The --description is empty; give one line saying what the skill does.")
            text = text.replace("description: One line saying when to use this skill.",
                                f"description: {description}", 1)
        interactive = not args.no_edit and sys.stdin.isatty() and editor()
        _write(path, text)  # the template is there even if the editor fails
        if interactive:
            try:
                _edit_and_save(text, path)
            except CairnError as exc:
                raise CairnError(f"{exc} The skill file {path} holds the template.") from None
        skill = skills.read_file(path)
        if out.as_json:
            out.json(skill.as_dict())
        else:
            out.text(f"Created the skill {name}: {path}" + ("" if interactive else " (edit it to write the instructions)"))
        return 0

    # edit: the user's file if there is one (also one skipped as broken, so it can be fixed here), else a
    # copy of the shipped skill
    source = path if path.is_file() else catalog.get(name).path
    copying = source != path
    if not editor():
        raise InvalidInput("Set $EDITOR (or $VISUAL) to edit a skill, or "
                           + (f"copy {source} to {path} and edit the copy (it overrides the shipped one)." if copying
                              else f"edit {path} directly."))
    original = decode(source.read_bytes(), str(source))
    changed = _edit_and_save(original, path)
    if out.as_json:
        loaded = skills.load().skills.get(name)  # None: a broken file left unchanged
        out.json((loaded.as_dict() if loaded else {"name": name, "path": str(path)}) | {"changed": changed})
    elif not changed:
        out.text(f"No change to the skill {name}.")
    else:
        out.text(f"Saved the skill {name}: {path}" + (" (your copy now overrides the shipped one)" if copying else ""))
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("skills", cmd_skills, "list, show, create or edit the chat's skills (instructions the model loads on demand)")
    p.add_argument("action", nargs="?", choices=["list", "show", "new", "edit"], default="list",
                   help="list (default), show, new or edit a skill")
    p.add_argument("name", nargs="?", metavar="NAME", help="a skill name: lowercase letters, digits, hyphens")
    p.add_argument("--no-edit", action="store_true", help="new: write the template without opening $EDITOR")
    p.add_argument("--description", metavar="TEXT", help="new: the skill's one-line description")
