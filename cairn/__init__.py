"""The installed shape of Cairn: one top-level package, `cairn`, holding Cairn's `core`, `tui` and `styles`.

The checkout keeps core/, tui/ and styles/ at its root and the code imports them by those names
(`from core.graph import ...`). Installed as three top-level packages they would share site-packages
with any other distribution's `core`, `tui` or `styles`, and pip would overwrite one with the other;
so the wheel puts them inside this package (site-packages/cairn/core/..., setup.py), and importing
`cairn` puts the folder holding them first on sys.path, for this process only. Every way in goes
through here: the `cairn` console script (`cairn:main`) and `python -m cairn`.
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGES = ("core", "tui", "styles")
_HERE = Path(__file__).resolve().parent
# The wheel: core/, tui/ and styles/ inside this folder. A checkout (the editable dev install, the tests
# run from the repo root): beside it.
ROOT = _HERE if (_HERE / "core" / "__init__.py").is_file() else _HERE.parent


def _put_first() -> None:
    if sys.path[:1] != [str(ROOT)]:
        sys.path.insert(0, str(ROOT))
    for name in PACKAGES:  # imported before this point, from elsewhere: Cairn's imports would get that one
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)  # None: a namespace package, never Cairn's
        if module is not None and (where is None or not Path(where).resolve().is_relative_to(ROOT)):
            raise ImportError(f"A package named {name!r} ({where or 'a namespace package'}) was imported before "
                              "Cairn's; import cairn first, or run Cairn in an environment of its own (pipx install).")


_put_first()


def main() -> int:
    from tui.cli.main import main as cli

    return cli()
