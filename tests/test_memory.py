"""Memory lifecycle (issue 8): the memory_access migration, uses recorded from chat turns and tools,
the recency/use boost in chat retrieval, the retention policy (only memory nodes, only when set),
`cairn doctor` reporting and repairing it, and the app applying it on start."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from chat_support import _no_proxies, anth, anthropic_provider, new_chat, searcher, send  # noqa: F401  (fixtures)
from core.agent import profiles
from core.graph import memory
from core.graph import retention
from core.config import ConfigError
from core.chat.context import ContextEngine, cut
from core.graph.retention import Policy
from fakes import text, tool_call

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=timezone.utc)


def stamp(dt: datetime) -> str:
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def days_ago(n: float) -> str:
    return stamp(NOW - timedelta(days=n))


def make(store, title: str, source: str = "", *, type: str = "note", created: str | None = None) -> int:
    node_id = store.add_node(title, source or title, type=type)["id"]
    if created:
        store.db.execute("UPDATE nodes SET created_at = ?, updated_at = ? WHERE id = ?", (created, created, node_id))
    return node_id


def used(store, node_id: int, count: int, last: str) -> None:
    store.db.execute("INSERT INTO memory_access(node_id, access_count, last_accessed_at) VALUES (?, ?, ?)"
                     " ON CONFLICT(node_id) DO UPDATE SET access_count = excluded.access_count,"
                     " last_accessed_at = excluded.last_accessed_at", (node_id, count, last))


def access_rows(store) -> dict[int, int]:
    return {r[0]: r[1] for r in store.db.execute("SELECT node_id, access_count FROM memory_access")}


# -- migration ------------------------------------------------------------------------------------
def test_a_version_1_database_migrates_to_2_after_a_backup(tmp_path, monkeypatch):
    import core.graph.db
    from core.graph.migrations import MIGRATIONS
    from core.graph.store import Store

    path = tmp_path / "old.db"
    monkeypatch.setattr(core.graph.db, "MIGRATIONS", MIGRATIONS[:1])  # the schema as Cairn shipped it before
    with Store(path) as old:
        assert old.db.user_version == 1
        # Written as version 1 wrote it: a plain row (today's store also records the write's history,
        # which a version-1 schema has no table for).
        kept = {"id": old.db.execute(
            "INSERT INTO nodes(title, source, created_at, updated_at) VALUES ('Written by version 1', 'Its text.',"
            " '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')").lastrowid}
        assert old.db.execute("SELECT name FROM sqlite_master WHERE name = 'memory_access'").fetchone() is None
    monkeypatch.undo()

    with Store(path) as new:
        assert new.db.user_version == len(MIGRATIONS) >= 2  # to the latest, through 2
        assert new.get_node(kept["id"])["title"] == "Written by version 1"
        mem = new.add_node("A memory", "remembered", type="memory")["id"]
        assert memory.record_access(new, [mem]) == 1
    backup = tmp_path / f"old.db.before-v{len(MIGRATIONS)}.bak"  # named after the version migrated to
    assert backup.exists()
    import sqlean

    raw = sqlean.connect(str(backup))
    try:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
        assert raw.execute("SELECT title FROM nodes").fetchall() == [("Written by version 1",)]
    finally:
        raw.close()


# -- recording uses -------------------------------------------------------------------------------
def test_record_access_counts_memory_only_and_leaves_the_node_row_alone(store):
    note = make(store, "My own note")
    mem = make(store, "Answered: something", type="memory")
    before = store.get_node(mem)
    assert memory.record_access(store, [note, mem, mem, 424242], at=days_ago(1)) == 1
    assert memory.record_access(store, [mem], at=days_ago(0)) == 1
    assert access_rows(store) == {mem: 2}
    info = memory.access(store, [note, mem])
    assert set(info) == {mem} and info[mem]["access_count"] == 2 and info[mem]["last_accessed_at"] == days_ago(0)
    assert store.get_node(mem) == before  # updated_at untouched: a use is not an edit
    store.delete_node(mem)
    assert access_rows(store) == {}  # the row goes with its node
    assert memory.record_access(store, []) == 0


COMPOST = "Turn the compost heap every week so the middle stays warm and the scraps break down quickly. " * 3


def test_a_retrieved_memory_passage_counts_as_a_use_each_turn(store, indexer, searcher, anth):
    note = make(store, "Compost notes", COMPOST)
    mem = make(store, "Answered: compost", COMPOST.replace("Turn", "You said: turn"), type="memory")
    indexer.run()
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text("Turn it weekly."))
    send(chat, "how often should I turn the compost heap?")
    sent = {p.node_id for p in chat.engine.retrieve("how often should I turn the compost heap?")}
    assert {note, mem} <= sent  # both were in the request's retrieved block
    assert access_rows(store) == {mem: 1}  # the user's note is never counted
    anth.script.add(text("Still weekly."))
    send(chat, "and the compost heap in winter?")
    assert access_rows(store) == {mem: 2}


def test_memory_read_by_a_tool_counts_and_a_listing_does_not(store, searcher, anth):
    note = make(store, "A plain note", "Lighthouse keeper logbook.")
    read = make(store, "Answered: lighthouse", "The lighthouse keeper wrote daily.", type="memory")
    found = make(store, "Answered: zeppelin", "Zeppelin hangar dimensions were noted.", type="memory")
    listed = make(store, "Answered: quasar", "Quasars are bright.", type="memory")
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(tool_call("getNodesById", {"ids": [note, read]}))
    anth.script.add(tool_call("searchContent", {"query": "zeppelin hangar"}))
    anth.script.add(tool_call("queryNodes", {"limit": 10}))  # lists titles: not a use of each node
    anth.script.add(text("Done reading."))
    send(chat, "Tell me about the weather on Mars.")
    assert chat.last_reply.tool_calls == 3
    rows = access_rows(store)
    assert rows.get(read) == 1 and rows.get(found) == 1
    assert listed not in rows and note not in rows


# -- the boost ------------------------------------------------------------------------------------
def test_boost_factor_is_small_and_grows_with_use_and_recency():
    assert memory.boost_factor(0, None, NOW) == 1.0
    assert memory.boost_factor(0, days_ago(365 * 5), NOW) == pytest.approx(1.0, abs=1e-6)
    fresh = memory.boost_factor(0, days_ago(0), NOW)
    assert fresh == pytest.approx(1.0 + memory.RECENCY_WEIGHT)
    assert memory.boost_factor(0, days_ago(30), NOW) == pytest.approx(1.0 + memory.RECENCY_WEIGHT / 2)
    assert memory.boost_factor(3, days_ago(0), NOW) > fresh
    top = memory.boost_factor(10_000, days_ago(0), NOW)
    assert top == pytest.approx(1.0 + memory.ACCESS_WEIGHT + memory.RECENCY_WEIGHT) and top <= 1.1


def test_cut_measures_the_relative_cutoff_from_the_unboosted_best():
    boosted = {"score": 1.05, "boost": 1.05}  # 1.0 before its boost
    note = {"score": 0.81}
    assert [h for _, h in cut([(0.5, boosted), (0.5, note)], 0.35, 0.8, 6)] == [boosted, note]
    # Counted naively (best 1.05), the note would fall under 0.8 x best and be dropped.
    assert 0.81 < 0.8 * 1.05


def _engine(store, searcher):
    return ContextEngine(store, searcher, profiles.get("orchestrator"))


def test_of_two_equally_good_memories_the_used_one_ranks_first(store, indexer, searcher):
    body = "The ferry to the island leaves at seven and the last one returns at nine. " * 3
    first = make(store, "Answered: ferry times", body, type="memory", created=days_ago(200))
    second = make(store, "Answered: ferry times", body, type="memory", created=days_ago(200))
    indexer.run()
    message = "when does the island ferry leave?"
    eng = _engine(store, searcher)
    before = [p.node_id for p in eng.retrieve(message)]
    assert before[:2] == [first, second]  # a tie: the search orders them by id
    used(store, second, 12, stamp(datetime.now(timezone.utc) - timedelta(days=1)))
    after = [p.node_id for p in eng.retrieve(message)]
    assert after[:2] == [second, first]
    hits = {h["id"]: h for _, h in eng.scored_hits(message)}
    assert hits[second]["boost"] > hits[first]["boost"] >= 1.0


def test_the_boost_leaves_user_notes_and_the_cosine_floor_alone(store, indexer, searcher, monkeypatch):
    body = "The island ferry departs at seven and returns at nine. "
    notes = [make(store, f"Ferry note {i}", body * 3 + f"Version {i}.") for i in range(3)]
    mem = make(store, "Answered: ferry", body * 3 + "You said so.", type="memory")
    off_topic = make(store, "Answered: violin", "Rosin the violin bow before every rehearsal. " * 3, type="memory")
    indexer.run()
    used(store, mem, 50, stamp(datetime.now(timezone.utc)))
    used(store, off_topic, 500, stamp(datetime.now(timezone.utc)))
    message = "what time does the island ferry depart?"
    eng = _engine(store, searcher)
    with_boost = [p.node_id for p in eng.retrieve(message)]
    monkeypatch.setattr(memory, "ACCESS_WEIGHT", 0.0)
    monkeypatch.setattr(memory, "RECENCY_WEIGHT", 0.0)
    without = [p.node_id for p in eng.retrieve(message)]
    assert [i for i in with_boost if i in notes] == [i for i in without if i in notes]
    assert set(notes) <= set(with_boost)
    monkeypatch.undo()
    # The off-topic memory is the most used node of all, and still under the cosine floor.
    assert off_topic not in with_boost
    assert eng.retrieve("How do I center a div with CSS?") == []


# -- retention ------------------------------------------------------------------------------------
def test_no_policy_removes_nothing(store):
    make(store, "Answered: ancient", type="memory", created=days_ago(3000))
    assert not Policy().active
    assert retention.plan(store, Policy(), NOW) == [] and retention.apply(store, Policy(), NOW) == []
    assert store.trash() == []


def test_max_age_removes_only_old_unused_memory_never_a_note(store):
    old_memory = make(store, "Answered: old", type="memory", created=days_ago(100))
    old_but_used = make(store, "Answered: old but used", type="memory", created=days_ago(100))
    used(store, old_but_used, 3, days_ago(2))
    used_long_ago = make(store, "Answered: used long ago", type="memory", created=days_ago(300))
    used(store, used_long_ago, 9, days_ago(45))
    fresh = make(store, "Answered: fresh", type="memory", created=days_ago(1))
    old_note = make(store, "My old note", created=days_ago(100))
    old_paper = make(store, "An old paper", type="paper", created=days_ago(100))
    policy = Policy(max_age_days=30)
    planned = retention.plan(store, policy, NOW)
    assert [p["id"] for p in planned] == [old_memory, used_long_ago]  # the longest unused first
    assert "created, never used" in planned[0]["reason"] and "last used" in planned[1]["reason"]
    removed = retention.apply(store, policy, NOW)
    assert {r["id"] for r in removed} == {old_memory, used_long_ago}
    remaining = {r[0] for r in store.db.execute("SELECT id FROM nodes")}
    assert remaining == {old_but_used, fresh, old_note, old_paper}
    assert {t["node_id"] for t in store.trash()} == {old_memory, used_long_ago}
    store.restore_node(old_memory)  # the trash is the ordinary, restorable one
    assert store.get_node(old_memory)["type"] == "memory"
    # Restoring counts as an edit: the policy does not take it straight back on the next start.
    assert [p["id"] for p in retention.plan(store, policy, NOW)] == []
    store.db.execute("UPDATE nodes SET updated_at = ? WHERE id = ?", (days_ago(40), old_but_used))  # edited
    used(store, old_but_used, 3, days_ago(60))
    assert [p["reason"] for p in retention.plan(store, policy, NOW)] == [
        f"last edited more than 30 days ago ({days_ago(40)[:10]})"]
    assert "Moved 2 memory nodes" in retention.summary(removed)


def test_max_count_keeps_the_most_recently_used_memory(store):
    mems = [make(store, f"Answered: {i}", type="memory", created=days_ago(50 - i)) for i in range(4)]
    used(store, mems[0], 1, days_ago(0.5))  # the oldest, but used today
    notes = [make(store, f"Note {i}", created=days_ago(500)) for i in range(5)]
    planned = retention.plan(store, Policy(max_count=2), NOW)
    assert {p["id"] for p in planned} == {mems[1], mems[2]}
    assert all("beyond the 2 most recently used" in p["reason"] for p in planned)
    retention.apply(store, Policy(max_count=2), NOW)
    assert {r[0] for r in store.db.execute("SELECT id FROM nodes WHERE type = 'memory'")} == {mems[0], mems[3]}
    assert all(store.get_node(n) for n in notes)


def test_apply_never_deletes_a_node_that_stopped_being_memory(store, monkeypatch):
    mem = make(store, "Answered: x", type="memory", created=days_ago(100))
    planned = retention.plan(store, Policy(max_age_days=1), NOW)
    store.update_node(mem, type="note")  # the user kept it as a note after the plan was made
    monkeypatch.setattr(retention, "plan", lambda *a, **k: planned)
    assert retention.apply(store, Policy(max_age_days=1), NOW) == []
    assert store.get_node(mem)["type"] == "note"


# -- configuration --------------------------------------------------------------------------------
@pytest.mark.parametrize("body, expect", [
    ("[memory]\nmax_age_days = -1\n", "`memory.max_age_days` must be a whole number, 0 or more"),
    ("[memory]\nmax_count = 2.5\n", "`memory.max_count` must be a whole number"),
    ("[memory]\nmax_count = \"10\"\n", "`memory.max_count` must be a whole number"),
    ("[memory]\nmax_age_days = true\n", "`memory.max_age_days` must be a whole number"),
    ("[memory]\nmax_days = 3\n", "unknown setting `memory.max_days`"),
    ("memory = 3\n", "`memory` must be a table"),
])
def test_bad_memory_settings_name_the_file_and_key(tmp_path, body, expect):
    from core import config

    path = tmp_path / "config.toml"
    path.write_text(body)
    os.chmod(path, 0o600)
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert expect in str(err.value) and str(path) in str(err.value)


def test_memory_settings_parse_and_default_to_no_policy(tmp_path):
    from core import config

    assert not Policy.from_config(config.Config()).active
    path = tmp_path / "config.toml"
    path.write_text("[memory]\nmax_age_days = 90\nmax_count = 500\n")
    os.chmod(path, 0o600)
    policy = Policy.from_config(config.load(path))
    assert policy == Policy(90, 500) and policy.active
    config.write_default(tmp_path / "fresh.toml")
    assert not Policy.from_config(config.load(tmp_path / "fresh.toml")).active  # the template sets none


# -- doctor ---------------------------------------------------------------------------------------
def test_doctor_reports_memory_past_the_policy_and_repair_trashes_it(store):
    from core.ops import doctor

    old = make(store, "Answered: old", type="memory", created=days_ago(400))
    note = make(store, "Old note", created=days_ago(400))
    store.db.execute("UPDATE nodes SET chunk_status = 'indexed'")  # keep the index checks quiet
    report = doctor.check(store, retention_policy=Policy(max_age_days=30))
    finding = next(f for f in report.findings if f.check == "memory_retention")
    assert finding.count == 1 and "1 memory nodes past the retention policy" in finding.detail
    assert not report.clean and store.get_node(old)  # reported, nothing removed
    repaired = doctor.check(store, repair=True, retention_policy=Policy(max_age_days=30))
    finding = next(f for f in repaired.findings if f.check == "memory_retention")
    assert finding.repaired and [r["id"] for r in repaired.memory_removed] == [old]
    assert {t["node_id"] for t in store.trash()} == {old} and store.get_node(note)
    quiet = doctor.check(store, repair=True)  # no policy: reported as such, nothing runs
    finding = next(f for f in quiet.findings if f.check == "memory_retention")
    assert finding.count == 0 and "no retention policy" in finding.detail and quiet.memory_removed == []


def _run(cmd, env, *args):
    return subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_cairn_doctor_with_a_policy_in_the_config(cairn_cmd, cli_env):
    from core.graph.store import Store

    home = Path(cli_env["CAIRN_HOME"])
    home.mkdir(parents=True)
    with Store(home / "cairn.db") as s:
        old = make(s, "Answered: stale", type="memory", created=stamp(datetime.now(timezone.utc) - timedelta(days=90)))
        note = make(s, "A note from long ago", created=stamp(datetime.now(timezone.utc) - timedelta(days=900)))
        s.db.execute("UPDATE nodes SET chunk_status = 'indexed'")
    (home / "config.toml").write_text("[memory]\nmax_age_days = 30\n")
    os.chmod(home / "config.toml", 0o600)
    r = _run(cairn_cmd, cli_env, "doctor")
    assert r.returncode == 1 and "1 memory nodes past the retention policy" in r.stdout, r.stdout + r.stderr
    r = _run(cairn_cmd, cli_env, "doctor", "--repair", "--json")
    report = json.loads(r.stdout)
    assert [m["id"] for m in report["memory_removed"]] == [old]
    with Store(home / "cairn.db") as s:
        assert [t["node_id"] for t in s.trash()] == [old] and s.get_node(note)


# -- the app applies the policy on start -------------------------------------------------------------
@pytest.fixture
def quiet_app_class():
    from tui.app import CairnApp

    class QuietApp(CairnApp):
        def index_pending(self) -> None:
            pass

        def watch_database(self) -> None:
            pass

    return QuietApp


async def _wait(pilot, condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


async def test_the_app_applies_the_policy_on_start_and_says_what_it_removed(store, db_path, quiet_app_class):
    ninety_days_ago = stamp(datetime.now(timezone.utc) - timedelta(days=90))
    old = make(store, "Answered: forgotten", type="memory", created=ninety_days_ago)
    note = make(store, "Old own note", created=ninety_days_ago)
    app = quiet_app_class(db_path, first_run_prompt=False)
    app.services.config.memory.max_age_days = 30
    async with app.run_test(size=(120, 40)) as pilot:
        await _wait(pilot, lambda: any("Memory retention" == (n.title or "") for n in app._notifications),
                    "the retention notification")
        message = next(n.message for n in app._notifications if n.title == "Memory retention")
        assert "Moved 1 memory node past the retention policy" in message and "Answered: forgotten" in message
    assert [t["node_id"] for t in store.trash()] == [old] and store.get_node(note)


async def test_the_app_without_a_policy_removes_nothing_and_says_nothing(store, db_path, quiet_app_class):
    make(store, "Answered: ancient", type="memory", created=days_ago(3000))
    app = quiet_app_class(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        await _wait(pilot, lambda: not [w for w in app.workers if w.group == "retention" and not w.is_finished],
                    "the retention worker")
        assert not any(n.title == "Memory retention" for n in app._notifications)
    assert store.trash() == []
