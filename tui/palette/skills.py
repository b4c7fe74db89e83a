"""Command palette entries for skills: "Skills: <name>" puts `Use the <name> skill: ` at the start of
the chat input and the keyboard after it.

Why not activate the skill at once: a skill is loaded by the model (activateSkill) in the course of a
request, and a skill needs an object (which node to integrate, which source to summarise). Starting the
message lets the user say that, and nothing is sent until they send it; the model sees the skill in
its catalog and loads it. Skipped skill files get one entry that shows why. `app` is tui.app.CairnApp,
typed as Textual's App so that this module does not import the app back.
"""

from __future__ import annotations

import os
from typing import Iterator

from textual.app import App, SystemCommand

from core.agent import skills

_cache: tuple[tuple, skills.Catalog] | None = None


def _signature() -> tuple:
    """What the catalog depends on: the user folder's .md files with their sizes and times."""
    folder = skills.user_dir()
    try:
        entries = sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size)
                         for e in os.scandir(folder) if e.name.endswith(".md"))
    except OSError:
        entries = []
    return (str(folder), tuple(entries))


def catalog() -> skills.Catalog:
    """The skills, re-read only when the user's folder changed (the palette asks on every keystroke)."""
    global _cache
    sig = _signature()
    if _cache is None or _cache[0] != sig:
        _cache = (sig, skills.load())
    return _cache[1]


def prefix(name: str) -> str:
    return f"Use the {name} skill: "


def skill_commands(app: App) -> Iterator[SystemCommand]:
    cat = catalog()
    for skill in cat.skills.values():
        yield SystemCommand(f"Skills: {skill.name}", skill.description, _use(app, skill.name))
    if cat.warnings:
        count = len(cat.warnings)
        yield SystemCommand(f"Skills: {count} skill file{'s' if count > 1 else ''} skipped",
                            "Show why (cairn skills lists them too)", _show_warnings(app, cat.warnings))


def _use(app: App, name: str):
    async def run() -> None:
        from tui.widgets.chat_pane import ChatInput

        await app.action_focus_chat()
        chat, _viewer = await app.right_panes()
        editor = chat.query_one(ChatInput)
        text = prefix(name)
        if not editor.text.startswith(text):
            result = editor.insert(text, (0, 0))  # before any draft, which is kept
            editor.move_cursor(result.end_location)
        else:
            editor.move_cursor((0, len(text)))
        editor.focus()

    return run


def _show_warnings(app: App, warnings: list[str]):
    def run() -> None:
        for warning in warnings:
            app.notify(warning, title="Skill skipped", severity="warning", timeout=10)

    return run
