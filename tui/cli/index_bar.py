"""The progress bar of an index run (`cairn index`, `cairn import`, `cairn doctor --repair`): the bar
is the share of the work done and the ETA comes from the work left, both in word pieces of embedding
input (core/index/progress.py), so neither jumps when a long note follows short ones; beside them the
nodes indexed and the nodes meaning search reaches ("searchable 32/119", then "all 119 searchable").
No live rate: chunks are counted as their batch is written, up to 1,024 at once, so a rate of them
sank while a batch was embedded and then leapt (the SSH walkthrough: 11 -> 3.5 -> 89 chunks/s); the
run's rate is in its summary (tui/cli/index.py)."""

from __future__ import annotations

from core.index.progress import IndexProgress, eta_text
from tui.cli.common import Out


class IndexBar:
    """Called with each IndexProgress; on stderr, shown from the first report that has work in it."""

    def __init__(self, out: Out, label: str = "Indexing"):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        self.bar = Progress(TextColumn(label), BarColumn(bar_width=20), TextColumn("{task.fields[notes]}"),
                            TextColumn("{task.fields[reach]}", style="dim"),
                            TextColumn("{task.fields[eta]}"), console=Console(stderr=True), transient=False)
        self.task = None
        self.reaching = False  # meaning search did not reach every note when the run began

    def __enter__(self):
        return self

    def __call__(self, p: IndexProgress) -> None:
        if self.task is None:
            if not p.notes_total:  # nothing to do: no empty bar
                return
            self.bar.start()
            self.task = self.bar.add_task("", total=None, notes="", reach="", eta="")
        if p.covered < p.graph_notes:
            self.reaching = True
            reach = f"searchable {p.covered:,}/{p.graph_notes:,}"
        else:  # once it got there, it says so (the figure vanishing read as a fault)
            reach = f"all {p.graph_notes:,} searchable" if self.reaching else ""
        self.bar.update(self.task, total=max(p.work_total, 1), completed=p.work_done,
                        notes=f"{p.notes_done:,}/{p.notes_total:,} nodes", reach=reach, eta=eta_text(p.eta) or "")

    def __exit__(self, *exc):
        if self.task is not None:
            self.bar.stop()
            self.bar.remove_task(self.task)
            self.task = None
