"""Every third-party module Cairn's code imports is a declared dependency of its own (pyproject.toml),
not something that happens to come with another one: read from the source, lazy imports inside
functions and `importlib.util.find_spec("name")` included."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
OURS = ("cairn", "core", "tui", "styles")
LOOKUPS = {"import_module", "find_spec", "__import__"}  # a module named by a string constant


def imported_names(source: str, filename: str = "<source>") -> set[str]:
    """The top-level names of the modules `source` imports, wherever the import is written."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in LOOKUPS and isinstance(node.args[0].value, str) and not node.args[0].value.startswith("."):
                names.add(node.args[0].value.split(".")[0])
    return names


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {_normalised(Requirement(line).name) for line in project["dependencies"]}


def _third_party_imports() -> dict[str, list[str]]:
    """name -> the files importing it, for every module of cairn/, core/ and tui/."""
    found: dict[str, list[str]] = {}
    for tree in OURS:
        for path in sorted((ROOT / tree).rglob("*.py")):
            for name in imported_names(path.read_text(encoding="utf-8"), str(path)):
                if name not in sys.stdlib_module_names and name not in OURS and name != "__future__":
                    found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def test_the_scanner_finds_imports_wherever_they_are_written():
    source = (
        "import a.b, c\nfrom d.e import f\nfrom . import local\nfrom .x import y\n"
        "def later():\n    import g\n    try:\n        from h import i\n    except ImportError:\n        pass\n"
        "importlib.util.find_spec('j')\nimportlib.import_module('k.l')\n__import__('m')\nfind_spec('.rel')\n"
    )
    assert imported_names(source) == set("acdghjkm")


def test_every_third_party_import_is_a_declared_dependency():
    imports = _third_party_imports()
    assert {"textual", "numpy", "anyio", "sqlite_vec"} <= set(imports), "the scan found too little to mean anything"
    providers = importlib.metadata.packages_distributions()
    declared = _declared()
    missing = {}
    for name, files in sorted(imports.items()):
        dists = providers.get(name)
        assert dists, f"{name} (imported by {files[0]}) is not installed here, so no distribution provides it"
        if not {_normalised(d) for d in dists} & declared:
            missing[name] = (sorted(set(dists)), files)
    assert not missing, ("imported but not declared in pyproject.toml's dependencies (coming with another package "
                         f"is not enough): {missing}")
