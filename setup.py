"""The wheel's layout (the rest of the metadata is in pyproject.toml): core/, tui/ and styles/ of the
checkout go inside one top-level package, `cairn` (site-packages/cairn/core/...), so that no file of
Cairn can overwrite, or be overwritten by, another distribution's `core`, `tui` or `styles`; cairn/__init__.py
makes the code's absolute imports (`from core.graph import ...`) find them. The package list is computed:
every subpackage of the three, with nothing else of the checkout (tests/, bench/)."""

from setuptools import find_packages, setup

TREES = ("core", "tui", "styles")

setup(
    packages=["cairn", *(f"cairn.{name}" for name in find_packages(include=[*TREES, *(f"{t}.*" for t in TREES)]))],
    package_dir={"cairn": "cairn", **{f"cairn.{t}": t for t in TREES}},
    package_data={"cairn.styles": ["*.tcss"], "cairn.core.agent": ["skills_builtin/*.md"]},  # core/agent/skills.py
)
