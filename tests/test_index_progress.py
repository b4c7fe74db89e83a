"""Rate and ETA of an index run from the work left, not the notes left (issue 26, finding 5: during a
vault import the rate fell from 7.3 to 0.6 notes/s and the ETA jumped 15 -> 42 -> 51 -> 41 s), and
rates that never read "0.0 nodes/s"."""

from __future__ import annotations

from core.index.progress import IndexProgress, RunTally, WorkRate, coverage_text, eta_text, rate_text


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# Notes as a vault has them: sizes differing a hundredfold (word pieces of embedding input), a run of
# small ones, then big ones, then small again.
SIZES = [300] * 20 + [30_000] * 5 + [400] * 30 + [12_000] * 8 + [250] * 40
SPEED = 2_000.0  # word pieces a second, steady (the embedder's cost follows its input)


def test_the_eta_from_the_work_left_holds_over_notes_of_every_size():
    clock = Clock()
    rate = WorkRate(clock)
    total = sum(SIZES)
    rate.update(0, total)
    rate.start()
    assert rate.eta() is None  # nothing to go on yet
    done, etas, notes_etas, started = 0, [], [], clock.now
    for i, size in enumerate(SIZES, 1):
        clock.now += size / SPEED
        done += size
        rate.update(done, total)
        true_left = (total - done) / SPEED
        eta = rate.eta()
        if eta is not None and true_left > 0:
            etas.append(abs(eta - true_left) / true_left)
        # what counting notes gives: notes left at the notes/s seen so far
        notes_eta = (len(SIZES) - i) / (i / (clock.now - started))
        if true_left > 0:
            notes_etas.append(abs(notes_eta - true_left) / true_left)
    assert len(etas) >= 80  # every note after the first 2 % of the work
    assert max(etas) < 0.01  # a steady embedder: the ETA is the true time left
    assert max(notes_etas) > 0.5  # counted in notes it was off by more than half


def test_the_eta_forgets_a_slow_start():
    """A run's first seconds go slower (on the Tasks vault from about half the later rate to all of it in
    3 s, while the planner chunks every note beside the model): the rate since the start carried that
    into the ETA, +37 % at a tenth of the run; the rate over the latter half of the run so far forgets it."""
    clock = Clock()
    rate = WorkRate(clock)
    total, done = 300_000, 0
    rate.update(0, total)
    rate.start()
    since_start = []
    while done < total:
        clock.now += 0.1
        elapsed = clock.now - 100.0
        speed = 16_000 * min(1.0, 0.5 + elapsed / 6)  # half speed at first, full from 3 s on (as measured)
        done = min(total, done + round(speed / 10))
        rate.update(done, total)
        true_left = (total - done) / 16_000
        if elapsed >= 0.15 * 19.5 and true_left > 2.0:  # from 15 % of the run on
            eta = rate.eta()
            assert eta is not None and abs(eta - true_left) / true_left <= 0.25, (elapsed, eta, true_left)
            since_start.append(abs((total - done) / (done / elapsed) - true_left) / true_left)
    assert max(since_start) > 0.25  # what the rate since the start said at the same moments


def test_the_eta_waits_for_enough_work_and_a_second():
    clock = Clock()
    rate = WorkRate(clock)
    rate.start()
    rate.update(10, 10_000)  # 0.1 % done
    clock.now += 5
    assert rate.per_second() is None and rate.eta() is None
    rate.update(500, 10_000)
    clock.now += 0.0
    assert rate.eta() == 9_500 / 98  # the latter half of the 5 s began at the 10 done: 490 in 5 s
    quick = WorkRate(clock)
    quick.start()
    quick.update(5_000, 10_000)  # half done in no time: no rate from a blink
    assert quick.eta() is None


def test_the_tally_counts_work_planned_and_estimated_and_drops_what_leaves():
    clock = Clock()
    seen: list[IndexProgress] = []
    tally = RunTally(seen.append, clock)
    tally.took_on({1: 1_000, 2: 5_000, 3: 400}, covered=7, graph_notes=10)
    assert seen[-1].work_total == 6_400 and seen[-1].notes_total == 3 and seen[-1].covered == 7
    # note 2's first chunk (600 word pieces) planned with note 1 whole; note 2 has 4,000 left (known now)
    tally.planned_batch(1_000 + 600, {1: 0, 2: 4_000})
    tally.dropped(3)  # it failed to chunk
    tally.started_embedding()
    clock.now += 2
    tally.embedding(1_600)
    tally.written(notes=1, vectors=2, newly_covered=2)
    p = seen[-1]
    assert (p.work_done, p.work_total) == (1_600, 5_600)
    assert (p.notes_done, p.covered, p.chunks_done) == (1, 9, 2)
    assert p.eta is None  # the first batch pays the model's first runs: no rate from it
    tally.planned_batch(2_000, {2: 2_000})
    tally.started_embedding()
    clock.now += 2
    tally.embedding(2_000)
    p = seen[-1]
    assert (p.work_done, p.work_total) == (3_600, 5_600)
    assert p.eta == 2_000 / 1_000  # 2,000 word pieces in the 2 s since the second batch began


def test_rates_are_in_sensible_units_and_never_zero():
    assert rate_text(1, 30.0, "chunk") == "1 chunk every 30 s"  # was "0.0 nodes/s"
    assert rate_text(3, 2.0, "chunk") == "1.5 chunks/s"
    assert rate_text(1_813, 23.4, "chunk") == "77 chunks/s"
    assert rate_text(1, 0.02, "chunk") is None  # a blink is no rate
    assert rate_text(0, 12.0, "chunk") is None
    assert rate_text(2, 130.0, "chunk") == "1 chunk every 1 min 05 s"


def test_the_sentences():
    assert coverage_text(118, 118) == "meaning search covers 118 of 118 notes"
    assert coverage_text(1, 1, "node") == "meaning search covers 1 of 1 node"
    assert [eta_text(x) for x in (None, 0.0, 0.2, 31.0, 125.0, 1_500.0, 3_725.0)] == [
        None, None, "ETA 1 s", "ETA 31 s", "ETA 2 min 05 s", "ETA 25 min", "ETA 1 h 02 min"]
    p = IndexProgress(notes_done=40, notes_total=118, covered=118, graph_notes=118, chunks_done=520,
                      work_done=300_000, work_total=770_000, seconds=10.0, eta=30.2)
    assert IndexProgress.from_dict(p.as_dict()) == p


def test_the_eta_counts_the_writing_of_what_was_embedded():
    clock = Clock()
    seen: list[IndexProgress] = []
    tally = RunTally(seen.append, clock)
    tally.took_on({1: 1_000, 2: 1_000}, covered=0, graph_notes=2)
    tally.planned_batch(1_000, {1: 0})
    tally.started_embedding()
    clock.now += 2
    tally.embedding(1_000)
    tally.planned_batch(1_000, {2: 0})
    tally.started_embedding()
    tally.written(notes=1, vectors=1, newly_covered=1, work=1_000, seconds=0.5)  # 0.5 ms a piece to write
    clock.now += 2
    tally.embedding(1_000)  # the model is done; the last batch is not written yet
    assert seen[-1].eta == 0.5


def test_the_command_lines_bar_says_when_meaning_search_reaches_every_note():
    from core.index.progress import IndexProgress
    from tui.cli.common import Out
    from tui.cli.index_bar import IndexBar

    def at(covered: int, done: int) -> IndexProgress:
        return IndexProgress(notes_done=done, notes_total=119, covered=covered, graph_notes=119, chunks_done=done,
                             work_done=done * 10, work_total=1190, seconds=1.0, eta=None)

    with IndexBar(Out(as_json=False)) as bar:
        bar(at(32, 0))
        assert bar.bar.tasks[0].fields["reach"] == "searchable 32/119"
        bar(at(119, 11))
        assert bar.bar.tasks[0].fields["reach"] == "all 119 searchable"  # it used to vanish
    with IndexBar(Out(as_json=False)) as bar:  # every note reachable from the start: nothing to say
        bar(at(119, 0))
        assert bar.bar.tasks[0].fields["reach"] == ""
