"""The architecture's import rules: the contracts in pyproject.toml ([tool.importlinter]) hold, and no
two modules of core and tui import each other, directly or round a loop."""

from __future__ import annotations

import subprocess
import sys
from collections import deque
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "tui")


def test_the_import_contracts_hold():
    # --no-cache: import-linter would otherwise write its cache into the checkout.
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--no-cache", "pyproject.toml"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert "Contracts:" in done.stdout, done.stdout + done.stderr  # it ran and checked something
    assert done.returncode == 0, done.stdout + done.stderr


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _loop_through(first: str, component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest loop first -> ... -> first inside the component."""
    members = set(component)
    came_from: dict[str, str] = {}
    queue = deque([first])
    while queue:
        node = queue.popleft()
        for nxt in sorted(edges[node] & members):
            if nxt == first:
                path = [node]
                while path[-1] != first:
                    path.append(came_from[path[-1]])
                return [first, *reversed(path[:-1]), first]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{first} is not on a loop in {component}")


def _describe(graph, loop: list[str]) -> str:
    steps = []
    for importer, imported in zip(loop, loop[1:]):
        lines = sorted(d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported))
        steps.append(f"  {importer} -> {imported} (l.{', '.join(map(str, lines))})")
    return "\n".join(steps)


def test_no_import_cycle_between_modules_of_core_and_tui():
    # Module-level and deferred (in-function) imports both run, so both count; `from pkg import submodule`
    # is an import of the submodule. Imports under TYPE_CHECKING never run: a typing-only reference back
    # is how an annotation avoids a loop, so they are left out.
    graph = grimp.build_graph(*PACKAGES, cache_dir=None, exclude_type_checking_imports=True)
    assert len(graph.modules) > 50, "the graph found too few modules to mean anything"
    edges = {m: {d for d in graph.find_modules_directly_imported_by(m) if d.split(".")[0] in PACKAGES} - {m}
             for m in graph.modules}
    assert edges["tui.app"], "the graph holds no imports between our modules"
    cycles = _cycles(edges)
    report = [f"{', '.join(c)}:\n{_describe(graph, _loop_through(c[0], c, edges))}" for c in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(report)


def test_the_cycle_finder_finds_a_loop_and_nothing_else():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _loop_through("a", ["a", "b", "c"], edges) == ["a", "b", "c", "a"]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# tui's parts, each importing only those after it (its own and lower): the app, the palette's commands,
# the multi-step flows, the screens and widgets they drive, the small typed messages and services.
TUI_LAYERS = (("tui.app",), ("tui.palette",), ("tui.flows",), ("tui.screens", "tui.widgets"),
              ("tui.messages", "tui.services"))


def _layer(module: str) -> int | None:
    for rank, layer in enumerate(TUI_LAYERS):
        if any(module == top or module.startswith(top + ".") for top in layer):
            return rank
    return None


def test_tui_imports_point_down_and_loop_nowhere_even_for_typing():
    # Stricter than the test above for tui: typing-only imports count too, so a widget that names a flow
    # or the app even in an annotation fails here. A widget reaches a flow by a message to the app.
    graph = grimp.build_graph("tui", cache_dir=None, exclude_type_checking_imports=False)
    edges = {m: {d for d in graph.find_modules_directly_imported_by(m) if d.split(".")[0] == "tui"} - {m}
             for m in graph.modules}
    upward = sorted(f"  {importer} -> {imported} (l.{', '.join(str(d['line_number']) for d in details)})"
                    for importer, targets in edges.items() for imported in targets
                    if _layer(importer) is not None and _layer(imported) is not None
                    and _layer(imported) < _layer(importer)
                    for details in [graph.get_import_details(importer=importer, imported=imported)])
    assert {_layer(m) for m in graph.modules} >= set(range(len(TUI_LAYERS))), "a layer holds no module"
    assert not upward, "imports against the direction of tui's layers:\n" + "\n".join(upward)
    cycles = _cycles(edges)
    report = [f"{', '.join(c)}:\n{_describe(graph, _loop_through(c[0], c, edges))}" for c in cycles]
    assert not cycles, "import cycles in tui:\n" + "\n".join(report)
