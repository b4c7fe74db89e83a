"""The header's line about indexing fits the header at 80 columns (issue 26 walkthrough, over SSH at
80x24: 'Cairn — meaning search covers 14 of 14 · 9 of 14 indexed, ETA…' while the guide loaded, and
'Cairn — indexing in another process (pid 29248): 66 of 119, E…' during a vault import: the ETA was
never seen). The width taken around the line is read from the real app's header."""

from __future__ import annotations

from textual.widgets._header import HeaderTitle

from core.index.progress import IndexProgress
from core.index.run_lock import Holder
from tui.app import CairnApp
import tui.index_status as index_status
from tui_support import settle


def progress(done: int, total: int, covered: int, notes: int, eta: float | None) -> IndexProgress:
    return IndexProgress(notes_done=done, notes_total=total, covered=covered, graph_notes=notes, chunks_done=done,
                         work_done=done, work_total=total, seconds=4.0, eta=eta)


async def header_lines_at(db_path, width: int, report) -> tuple[list[str], int]:
    """What the app's own IndexStatus puts in the header for `report(status)`, and the header's room
    for the sub-title (its title region less 'Cairn — ')."""
    shown: list[str] = []
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(width, 24)) as pilot:
        await settle(app, pilot)
        status = app._index_status
        status._show = shown.append  # the app's own status line maker, recorded instead of shown
        report(status)
        room = app.query_one(HeaderTitle).content_region.width - len(f"{app.title} — ")
    return [line for line in shown if "indexing" in line or " indexed" in line], room  # not a coverage line


CASES = [
    lambda s: s.progress(progress(9, 14, 14, 14, 5)),  # the guide, loading
    lambda s: s.progress(progress(50, 119, 138, 138, 16)),  # a vault
    lambda s: s.progress(progress(5_000, 11_900, 13_800, 13_800, 136)),  # a big one
]


async def test_the_own_run_line_fits_at_80_columns_with_its_eta(db_path, store):
    for report in CASES:
        (line,), room = await header_lines_at(db_path, 80, report)
        assert len(line) <= room and "ETA" in line and " indexed" in line, (line, room)
    (line,), room = await header_lines_at(db_path, 130, CASES[1])
    assert line == "meaning search covers 138 of 138 · 50 of 119 indexed, ETA 16 s"  # wide: all of it


def other_now(db_path, p: IndexProgress):
    """The app's status asked once about a run held by pid 29248 (only for that call: the app's own
    index worker reads `holder` too, and would follow that run for ever)."""
    def report(status):
        real = index_status.holder
        index_status.holder = lambda db: Holder(pid=29248, progress=p)
        try:
            status.other_now(db_path)
        finally:
            index_status.holder = real
    return report


async def test_another_process_line_fits_at_80_columns_with_its_eta(db_path, store):
    for p in (progress(66, 119, 138, 138, 13), progress(6_600, 11_900, 13_800, 13_800, 136)):
        (line,), room = await header_lines_at(db_path, 80, other_now(db_path, p))
        assert len(line) <= room and "ETA" in line and line.startswith("indexing "), (line, room)
    (line,), room = await header_lines_at(db_path, 130, other_now(db_path, progress(66, 119, 138, 138, 13)))
    assert line == "indexing in another process (pid 29248): 66 of 119, ETA 13 s"
