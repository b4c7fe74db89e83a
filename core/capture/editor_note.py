"""A new note written in a text editor (`cairn add --edit`, N in the app): the file the editor opens and
how the file it leaves becomes a note. Running the editor is the caller's (the CLI, tui/flows).

The file starts with a frontmatter block whose `title:` is empty (or holds what the command line gave),
then an empty line for the text. What the user saves is read as:

- title: the frontmatter's `title`; without one, the first non-empty line of the text, its markdown
  marks removed (as `cairn add TEXT` titles a text: core.graph.store.title_from_text). That line is
  the title, not text, unless it is longer than a title is cut to, and then it stays in the text too;
- text: the rest, without the blank lines around it;
- `dimensions` (or `tags`), `description`, `link` and `date` (or `event_date`) in the frontmatter fill
  those fields; any other key is refused (the file is kept, nothing saved), as is YAML that does not
  read as `key: value` pairs.

Nothing is written when the file has no title and no text, or is the template as it was handed over
(`read` returns None): the caller says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from core.errors import InvalidInput
from core.graph.store import title_from_text

KEYS = ("title", "dimensions", "tags", "description", "link", "date", "event_date")


@dataclass(frozen=True)
class EditorNote:
    title: str
    source: str
    dimensions: list[str] = field(default_factory=list)
    description: str = ""
    link: str | None = None
    event_date: str | None = None


def _yaml_value(value) -> str:
    import yaml

    return yaml.safe_dump(value, allow_unicode=True, default_flow_style=True, width=10_000).strip().removesuffix("...").strip()


def template(title: str = "", *, dimensions: Iterable[str] = (), description: str = "", link: str | None = None,
             event_date: str | None = None) -> str:
    """The file handed to the editor: the frontmatter (an empty title to fill in, and what was given),
    then an empty line for the text."""
    lines = ["---", f"title: {_yaml_value(title)}" if title else "title: "]
    if dims := list(dimensions):
        lines.append(f"dimensions: {_yaml_value(dims)}")
    if description:
        lines.append(f"description: {_yaml_value(description)}")
    if link:
        lines.append(f"link: {_yaml_value(link)}")
    if event_date:
        lines.append(f"date: {_yaml_value(str(event_date))}")
    return "\n".join([*lines, "---", "", ""])


def _strings(key: str, value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v).strip() for v in value if str(v).strip()]
    raise InvalidInput(f"`{key}` in the frontmatter must be a list or a comma-separated line.")


def _text(key: str, value) -> str:
    if value is None:
        return ""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value).strip()
    raise InvalidInput(f"`{key}` in the frontmatter must be a single line of text.")


def read(text: str, handed: str) -> EditorNote | None:
    """The note in the file the editor left (`handed`: the template it was given); None when nothing
    was written. Raises InvalidInput for a frontmatter it cannot take."""
    from core.capture.files import _split_frontmatter  # the frontmatter rule `cairn add FILE.md` reads by

    text = text.replace("\r\n", "\n").removeprefix("\ufeff")
    if text.strip() == handed.strip():
        return None
    front, body, problem = _split_frontmatter(text)
    if problem:  # "the frontmatter is not valid YAML (…); it was kept as text"
        reason = problem.split("; it was kept")[0]
        raise InvalidInput(reason[0].upper() + reason[1:] + "; nothing was saved.")
    front = front or {}
    unknown = [str(k) for k in front if str(k).lower() not in KEYS]
    if unknown:
        raise InvalidInput(f"The frontmatter key {unknown[0]!r} is not one a new note takes (" + ", ".join(KEYS)
                           + "); nothing was saved.")
    values = {str(k).lower(): v for k, v in front.items()}
    title = " ".join(_text("title", values.get("title")).split())
    lines = body.split("\n")
    if not title:
        first = next((i for i, line in enumerate(lines) if line.strip()), None)
        if first is not None:
            title = title_from_text(lines[first])
            if title == title_from_text(lines[first], limit=len(lines[first]) + 1):
                lines = lines[first + 1:]  # the line is the title (one cut short stays in the text too)
    source = "\n".join(lines).strip("\n")
    if not title and not source.strip():
        return None
    if not title:
        title = title_from_text(source)
    dimensions = _strings("dimensions", values.get("dimensions")) + _strings("tags", values.get("tags"))
    date = values.get("event_date", values.get("date"))
    return EditorNote(title=title, source=source, dimensions=list(dict.fromkeys(dimensions)),
                      description=_text("description", values.get("description")),
                      link=_text("link", values.get("link")) or None, event_date=_text("date", date) or None)
