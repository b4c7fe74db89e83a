"""Skills: named instructions the orchestrator loads on demand (DESIGN.md, "system 2").

A skill is a markdown file `<name>.md` with a small frontmatter and the instructions as its body:

    ---
    name: weekly-review
    description: Review the nodes updated in the last 7 days.
    ---
    1. Call queryNodes ...

Cairn ships a few (core/agent/skills_builtin/*.md, package data); the user's own live in `skills/` beside the
config file, and a user file with a shipped skill's name overrides it. The catalog (names and one-line
descriptions only) sits in the orchestrator's cached prefix, so it is rendered once per conversation and
kept small; the full text enters a conversation only when the model calls activateSkill.

A bad file (not UTF-8, binary, too large, no name or description, a name that is not a slug) is skipped
with a warning the CLI and the TUI show; loading never raises for one bad file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from core import paths
from core.errors import InvalidInput, NotFound

BUILTIN_DIR = Path(__file__).resolve().parent / "skills_builtin"
MAX_FILE_BYTES = 64 * 1024  # a skill file larger than this is skipped (it would not be a skill)
MAX_NAME_CHARS = 64
MAX_SKILL_CHARS = 8_000  # of one skill's text, in a tool result or re-attached after a summary
MAX_REATTACH_CHARS = 16_000  # of all skills re-attached after a summary
MAX_CATALOG = 40  # skills listed in the cached prefix
MAX_DESCRIPTION_CHARS = 120  # of one description in the catalog

CATALOG_HEADING = "## Skills (call activateSkill to load one)"
# The user-run workflows (core/assist/integrate.py, core/assist/mentions.py, core/assist/distil.py): the model cannot run
# them, but should know they exist and how the user starts them, to suggest one when it fits.
WORKFLOWS = (
    "## Workflows (the user starts these; suggest one when it fits)\n"
    "- Integrate a node: find related nodes and propose explained edges for the user to accept, edit or reject "
    "(key i on a node in the Focus panel; `cairn integrate ID`).\n"
    "- Link suggestions: edges for the other nodes a note mentions by title or alias (key L after saving; "
    "`cairn links ID`).\n"
    "- Distil a chat: propose new notes, updates and retirements from a conversation for the user to review "
    "(ctrl+t in the chat; `cairn distil CHAT_ID`)."
)

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(?:(.*?)\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)
_OPENING = re.compile(r"\A---[ \t]*(?:\r?\n|\Z)")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    instructions: str
    path: Path
    origin: str  # "shipped" | "user"
    overrides: bool = False  # a user skill that replaces a shipped one of the same name

    def as_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "origin": self.origin,
                "overrides_shipped": self.overrides, "path": str(self.path), "chars": len(self.instructions)}


@dataclass
class Catalog:
    """Every loadable skill by name (sorted), and one warning per skipped file."""

    skills: dict[str, Skill] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return list(self.skills)

    def get(self, name: str) -> Skill:
        skill = self.skills.get(name)
        if skill is None:
            known = ", ".join(self.skills) or "(none)"
            raise NotFound(f"There is no skill {name!r}; the skills are: {known}.")
        return skill


def user_dir() -> Path:
    """`skills/` beside config.toml (DESIGN.md, "Paths")."""
    return paths.config_dir() / "skills"


def check_name(name: str) -> str:
    """A skill name is a slug: lowercase letters, digits and single hyphens (it is also the file name)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > MAX_NAME_CHARS:
        raise InvalidInput(f"{name!r} is not a valid skill name: use lowercase letters, digits and hyphens "
                           f"(e.g. weekly-review), at most {MAX_NAME_CHARS} characters.")
    return name


def _frontmatter(block: str, where: str) -> dict[str, str]:
    """`key: value` lines (a value may contain colons and may be quoted). Not YAML: a description
    such as "Integrate: find related nodes" must not fail on its colon. Indented and list lines belong
    to keys Cairn does not read and are ignored, unless they continue name or description."""
    meta: dict[str, str] = {}
    last = None
    for n, line in enumerate(block.splitlines(), start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t-":
            if last in ("name", "description"):
                raise InvalidInput(f"{where}, line {n}: write the {last} on one line.")
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise InvalidInput(f"{where}, line {n}: the frontmatter takes 'key: value' lines (name, description).")
        key, value = key.strip().lower(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        meta[key] = value
        last = key
    return meta


def parse(text: str, path: Path, origin: str = "user") -> Skill:
    """A skill from a file's text; InvalidInput (naming the file) if it is not one."""
    where = str(path)
    m = _FRONTMATTER.match(text)
    if m is None and _OPENING.match(text):
        raise InvalidInput(f"{where}: the frontmatter opened by '---' on line 1 is never closed; put a '---' "
                           "line after the name: and description: lines, then the instructions.")
    if m is None:
        raise InvalidInput(f"{where}: no frontmatter; a skill starts with '---', then name: and description: "
                           "lines, then '---' and the instructions.")
    meta = _frontmatter(m.group(1) or "", where)
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput(f"{where}: the frontmatter has no name.")
    if not isinstance(description, str) or not description.strip():
        raise InvalidInput(f"{where}: the frontmatter has no description (one line saying what the skill does).")
    name = name.strip()
    try:
        check_name(name)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    if name != path.stem:
        raise InvalidInput(f"{where}: the name {name!r} differs from the file name; call the file {name}.md.")
    body = text[m.end():].strip()
    if not body:
        raise InvalidInput(f"{where}: the skill has no instructions after the frontmatter.")
    return Skill(name, " ".join(description.split()), body, path, origin)


def read_file(path: Path, origin: str = "user") -> Skill:
    """Read and parse one skill file; InvalidInput says why it cannot be used."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InvalidInput(f"{path}: {size:,} bytes; a skill file is at most {MAX_FILE_BYTES // 1024} KB.")
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    if len(data) > MAX_FILE_BYTES:  # grew between stat and read
        raise InvalidInput(f"{path}: larger than {MAX_FILE_BYTES // 1024} KB; a skill file is at most that.")
    if b"\x00" in data:
        raise InvalidInput(f"{path}: contains NUL bytes (a binary file?), not markdown.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}).") from None
    return parse(text.removeprefix("\ufeff"), path, origin)


def _scan(folder: Path, origin: str, warnings: list[str]) -> dict[str, Skill]:
    found: dict[str, Skill] = {}
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".md")
    except FileNotFoundError:
        return found
    except OSError as exc:
        warnings.append(f"{folder}: cannot list the skills folder ({exc.strerror or exc}).")
        return found
    for path in files:
        if path.is_dir():
            continue
        try:
            skill = read_file(path, origin)
        except InvalidInput as exc:
            warnings.append(f"skipped {exc}")
            continue
        found[skill.name] = skill
    return found


def load(folder: Path | None = None) -> Catalog:
    """The shipped skills, overridden by the user's (from `folder`, default `user_dir()`), by name."""
    warnings: list[str] = []
    shipped = _scan(BUILTIN_DIR, "shipped", warnings)
    user = _scan(user_dir() if folder is None else folder, "user", warnings)
    merged = dict(shipped)
    for name, skill in user.items():
        merged[name] = Skill(skill.name, skill.description, skill.instructions, skill.path, "user",
                             overrides=name in shipped)
    return Catalog({n: merged[n] for n in sorted(merged)}, warnings)


# -- what the model sees ------------------------------------------------------------------------
def _one_line(text: str, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def catalog_text(catalog: Catalog) -> str:
    """The orchestrator's system-2 block: skill names and one-line descriptions, then the workflows."""
    parts = []
    if catalog.skills:
        lines = [CATALOG_HEADING]
        listed = list(catalog.skills.values())[:MAX_CATALOG]
        lines += [f"- {s.name} — {_one_line(s.description)}" for s in listed]
        if len(catalog.skills) > MAX_CATALOG:
            lines.append(f"- … {len(catalog.skills) - MAX_CATALOG} more not listed (activateSkill loads any by name)")
        parts.append("\n".join(lines))
    parts.append(WORKFLOWS)
    return "\n\n".join(parts)


def bounded(text: str, limit: int = MAX_SKILL_CHARS) -> str:
    """A skill's text cut to `limit` characters, saying so."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… skill text truncated: {len(text):,} characters, the first {limit:,} shown]"


def activation_text(skill: Skill) -> str:
    """What activateSkill returns (and what is re-attached after a summary)."""
    return f"# Skill: {skill.name}\n{skill.description}\n\n{bounded(skill.instructions)}"


def reattach_block(texts: list[tuple[str, str]], limit: int = MAX_REATTACH_CHARS) -> tuple[str, list[str], list[str]]:
    """The block re-attached after a rolling summary: (text, names kept, names dropped). `texts` is
    [(name, activation text)] oldest activation first; the oldest are dropped first to stay in `limit`."""
    if not texts:
        return "", [], []
    kept = list(texts)
    while kept and sum(len(t) for _, t in kept) > limit:
        kept.pop(0)  # the oldest activation goes first
    names = [n for n, _ in kept]
    dropped = [n for n, _ in texts if n not in names]
    lines = ["[Active skills, re-attached after the summary: keep following them]"]
    lines += [t for _, t in kept]
    if dropped:
        lines.append(f"[Not re-attached, to stay within {limit:,} characters: {', '.join(dropped)} "
                     "(the oldest activations); call activateSkill to load one again.]")
    return "\n\n".join(lines), names, dropped


def template(name: str) -> str:
    """A new skill file for `cairn skills new NAME`."""
    check_name(name)
    return (f"---\nname: {name}\ndescription: One line saying when to use this skill.\n---\n"
            "Write the instructions here: the steps to take, the tools to call (queryNodes, searchContent,\n"
            "getNodesById, queryEdges, createNode, createEdge ...), and what to show the user.\n")
