"""The prompt-cache policy (core/chat/cache_policy.py): TTLs chosen by expected cost from the chat's pace,
laid out by the real AnthropicProvider and sent with the real SDK to the fake server (which refuses what
the real API refuses: more than 4 breakpoints, a 1h breakpoint after a 5m one), and shown by `cairn
context` and the Context viewer."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chat_support import (  # noqa: F401  (fixtures)
    KEY,
    SONNET,
    _no_proxies,
    anth,
    anthropic_provider,
    new_chat,
    searcher,
    send,
)
from core.chat import cache_policy as cp
from core.providers import models
from core.providers.base import Turn, Usage
from core.providers.request import CachePlan, ContextRequest, Snapshot, Suffix, estimate_tokens
from fakes import text
from fakes.anthropic_server import CacheRequestError, breakpoints_of
from fakes.tokens import anthropic_blocks

SONNET_FACTS = models.facts(SONNET, "anthropic")  # 2,048-token minimum; $3 / 3.75 / 6 / 0.30
PRICES = cp.Prices.of(SONNET_FACTS)
BIG = cp.Sizes(stable=2500, history=6000, new=400)  # a chat well past the minimum


# -- the choice ---------------------------------------------------------------------------------
def test_a_ten_minute_pace_keeps_the_history_for_an_hour_and_says_why():
    plan = cp.plan(SONNET_FACTS, "auto", BIG, cp.Pace((540.0, 600.0, 720.0)))
    assert (plan.system_ttl, plan.history_ttl) == ("1h", "1h")
    assert plan.reason == "history cached for 1 h: your last turns came 9–12 min apart"
    assert plan.expected_usd["1h/1h"] < plan.expected_usd["5m/5m"]


def test_a_continuous_session_stays_at_five_minutes():
    plan = cp.plan(SONNET_FACTS, "auto", BIG, cp.Pace((20.0, 45.0, 90.0)))
    assert (plan.system_ttl, plan.history_ttl) == ("5m", "5m")
    assert plan.reason == "history cached for 5 min: your last turns came 20 s–2 min apart"


def test_the_first_turn_keeps_the_five_minute_layout():
    plan = cp.plan(SONNET_FACTS, "auto", cp.Sizes(2500, 30, 30), cp.Pace())
    assert (plan.system_ttl, plan.history_ttl) == ("5m", "5m")
    assert plan.reason == "history cached for 5 min: no earlier turn yet to measure your pace by"


def test_pauses_longer_than_an_hour_never_pay_for_one_hour_writes():
    plan = cp.plan(SONNET_FACTS, "auto", BIG, cp.Pace((7200.0, 5400.0, 9000.0)))
    assert (plan.system_ttl, plan.history_ttl) == ("5m", "5m")
    assert plan.reason == "history cached for 5 min: your last turns came 1.5–2.5 h apart"


def test_a_long_system_part_and_a_short_history_keep_only_the_system_part_an_hour():
    """Mostly quick turns, one 20-minute pause: the system part is worth an hour, the small history is
    cheaper rewritten at 5 minutes than kept at the 1-hour price."""
    plan = cp.plan(SONNET_FACTS, "auto", cp.Sizes(stable=10_000, history=200, new=100),
                   cp.Pace((30.0, 40.0, 1200.0, 30.0, 60.0, 45.0)))
    assert (plan.system_ttl, plan.history_ttl) == ("1h", "5m")
    assert plan.reason.startswith("system part cached for 1 h, history for 5 min: your last turns came 30 s–20 min")


def test_a_history_below_the_minimum_is_weighed_as_if_it_reached_it_and_says_so():
    plan = cp.plan(SONNET_FACTS, "auto", cp.Sizes(1500, 400, 300), cp.Pace((600.0,)))
    assert plan.history_ttl == "1h"
    assert plan.reason == ("history cached for 1 h once it reaches the model's minimum of 2,048 tokens "
                           "(~1,900 now, estimate): your last turn came 10 min before this one")


def test_a_fixed_cache_ttl_and_a_model_without_prices():
    plan = cp.plan(SONNET_FACTS, "1h", BIG, cp.Pace((20.0,)))
    assert (plan.system_ttl, plan.history_ttl) == ("1h", "5m")
    assert plan.reason == 'system part cached for 1 h (chat.cache_ttl = "1h"), history for 5 min'
    unknown = models.facts("claude-next-9", "anthropic")
    plan = cp.plan(unknown, "auto", BIG, cp.Pace((600.0,)))
    assert (plan.system_ttl, plan.history_ttl) == ("5m", "5m") and "no known prices" in plan.reason


def test_other_providers_are_told_what_they_do_by_themselves():
    assert cp.note_for("openai", models.facts("gpt-4.1-mini", "openai"), "auto") == (
        "OpenAI caches the prefix by itself from 1,024 tokens; there is no cache lifetime to choose per request")
    assert "keeps it 24 h" in cp.note_for("openai", models.facts("gpt-4.1", "openai"), "1h")
    assert cp.note_for("offline", models.facts("", "offline"), "auto") == ""
    assert cp.note_for("openai", models.facts("llama3", local=True), "auto") == ""


def test_the_pace_is_measured_from_the_last_request_of_each_turn():
    """A turn's tool steps refresh the cache: the gap runs from the last of them to the next turn."""
    rows = [("2026-05-01T09:00:00.000Z", True), ("2026-05-01T09:00:30.000Z", False),  # turn 1 + a tool step
            ("2026-05-01T09:10:30.000Z", True),  # 10 min after the tool step
            ("2026-05-01T09:30:30.000Z", True)]
    pace = cp.pace_of(rows, "2026-05-01T09:35:30.000Z")
    assert pace.gaps == (600.0, 1200.0, 300.0)
    assert cp.pace_of([], "2026-05-01T09:00:00.000Z").gaps == ()


def test_a_row_whose_time_cannot_be_read_is_left_out_of_the_pace():
    """Rows written by hand or by another tool may carry no ISO time: the pace comes from the rest."""
    rows = [("x", True), ("2026-05-01T09:00:00.000Z", True), ("", False), ("2026-05-01T09:10:00.000Z", True)]
    assert cp.pace_of(rows, "2026-05-01T09:15:00.000Z").gaps == (600.0, 300.0)
    assert cp.pace_of([("x", True)], "2026-05-01T09:15:00.000Z").gaps == ()
    # a stamp without a zone is UTC, as Cairn writes them (not the machine's local time)
    assert cp.pace_of([("2026-05-01T09:00:00", True)], "2026-05-01T09:15:00.000Z").gaps == (900.0,)


def test_sizes_count_what_is_new_since_the_previous_user_text():
    history = [{"role": "user", "content": [{"type": "text", "text": "q" * 400}]},
               {"role": "assistant", "content": [{"type": "text", "text": "a" * 800}]}]
    request = ContextRequest(Snapshot([], "s" * 4000, "", "", []), history, "n" * 40, Suffix("", "", ""), SONNET)
    sizes = cp.sizes_of(request)
    assert sizes.stable == 1000 + 1  # the system text, and "[]" for no tools
    assert sizes.new < sizes.history and sizes.new == sizes.history - estimate_tokens(
        json.dumps(history[0]["content"]))


ANTHROPIC_FACTS = [m for m in models.MODELS.values() if m.provider == "anthropic"]


@settings(max_examples=300, deadline=None)
@given(facts=st.sampled_from(ANTHROPIC_FACTS),
       stable=st.integers(0, 60_000), history=st.integers(0, 150_000), new_share=st.floats(0, 1),
       gaps=st.lists(st.floats(0, 4 * 3600, allow_nan=False), max_size=10))
def test_the_chosen_plan_is_never_dearer_than_another_under_the_model(facts, stable, history, new_share, gaps):
    sizes = cp.Sizes(stable, history, round(history * new_share))
    pace = cp.Pace(tuple(gaps))
    prices = cp.Prices.of(facts)
    chosen, costs = cp.choose(sizes, prices, pace)
    assert chosen in cp.PLANS and set(costs) == set(cp.PLANS)
    assert all(costs[chosen] <= c + 1e-12 for c in costs.values())
    assert chosen[0] == "1h" or chosen[1] == "5m"  # a 1h breakpoint never follows a 5m one
    assert cp.choose(sizes, prices, pace) == (chosen, costs)  # deterministic
    plan = cp.plan(facts, "auto", sizes, pace)
    assert (plan.system_ttl, plan.history_ttl) == chosen and plan.reason


# -- the layout: every plan, in and out of a tool loop, as strict as the API ------------------------------
def _request(turns: int, plan: CachePlan | None) -> ContextRequest:
    history = []
    for k in range(turns):
        history += [{"role": "user", "content": [{"type": "text", "text": f"question {k}"}]},
                    {"role": "assistant", "content": [{"type": "text", "text": f"answer {k}"}]}]
    tools = [{"name": "queryNodes", "description": "d", "input_schema": {"type": "object", "properties": {}}}]
    return ContextRequest(Snapshot(tools, "system", "", "", []), history, "now", Suffix("focus", "", "date"), SONNET,
                          cache=plan)


def _loop(steps: int) -> list[dict]:
    loop = []
    for k in range(steps):
        loop += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "queryNodes", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "r"}]}]
    return loop


@settings(max_examples=100, deadline=None)
@given(plan=st.sampled_from([None, *cp.PLANS]), turns=st.integers(0, 4), steps=st.integers(0, 3),
       configured=st.sampled_from(["auto", "5m", "1h"]))
def test_every_body_has_at_most_four_breakpoints_and_no_1h_after_a_5m(plan, turns, steps, configured):
    from core.providers.anthropic_provider import AnthropicProvider

    cache = None if plan is None else CachePlan(*plan)
    body = AnthropicProvider("k", SONNET, cache_ttl=configured).body(Turn(_request(turns, cache), _loop(steps)))
    bps = breakpoints_of(body, anthropic_blocks(body))  # the fake's rules, which raise as the API's 400s do
    assert 2 <= len(bps) <= 4
    ttls = [ttl for _, ttl in bps]
    assert ttls == sorted(ttls, key=lambda t: t != "1h")
    if cache is not None:
        assert ttls[0] == cache.system_ttl and ttls.count("1h") >= (cache.history_ttl == "1h") * 2


def test_the_fake_refuses_what_the_api_refuses():
    body = {"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "u", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]}
    with pytest.raises(CacheRequestError, match="ttl='1h' cache_control block must not come after"):
        breakpoints_of(body, anthropic_blocks(body))


def test_one_hour_writes_are_priced_at_the_one_hour_price():
    usage = Usage(input=2000, output=100, cache_write=1000, cache_read=500, cache_write_1h=600)
    expected = (500 * 3.00 + 400 * 3.75 + 600 * 6.00 + 500 * 0.30 + 100 * 15.00) / 1e6
    assert SONNET_FACTS.cost(usage, "auto") == pytest.approx(expected)
    assert (usage + usage).cache_write_1h == 1200 and usage.as_dict()["cache_write_1h"] == 600


# -- a chat through the real SDK against the fake ------------------------------------------------------
@pytest.fixture
def core_notes(store):
    """Always-on notes long enough that the prefix passes claude-sonnet-4-6's 2,048-token minimum."""
    body = " ".join(f"Fact {i}: the project keeps its notes in one SQLite file." for i in range(250))
    store.add_node("Identity", body, metadata={"core": True})


@pytest.fixture
def paced(monkeypatch, anth):
    """core.clock (the rows' stamps, from which the pace is read) and the fake's cache clock, moved on
    together: `paced(600)` is ten minutes of the user reading their notes. Nothing sleeps."""
    import core.clock

    start = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)
    offset = [0.0]
    monkeypatch.setattr(core.clock, "now", lambda: (start + timedelta(seconds=offset[0])).isoformat(
        timespec="milliseconds").replace("+00:00", "Z"))

    def advance(seconds: float) -> None:
        offset[0] += seconds
        anth.advance_time(seconds)

    return advance


def _ttls(body: dict) -> list[str]:
    return [ttl for _, ttl in breakpoints_of(body, anthropic_blocks(body))]


def _chat_turns(store, searcher, anth, paced, gaps: list[float]):
    provider = anthropic_provider(anth, cache_ttl="auto")
    chat = new_chat(store, provider, searcher)
    for k, gap in enumerate(gaps):
        if gap:
            paced(gap)
        anth.script.add(text(f"Reply {k}: otters live along rivers and coasts, and they eat fish. " * 8))
        send(chat, f"question {k} about otters")
    reqs = anth.model_requests()
    assert [r.status for r in reqs] == [200] * len(gaps)
    return chat, reqs


def test_a_ten_minute_pace_sends_one_hour_breakpoints_and_the_next_turn_reads_them(store, searcher, anth,
                                                                                  core_notes, paced):
    chat, reqs = _chat_turns(store, searcher, anth, paced, [0, 600, 600, 600])
    assert _ttls(reqs[0].body) == ["5m", "5m", "5m"]  # the first turn: no pace yet
    # from the second turn on: system, previous user text (anchor) and new user text for an hour; the
    # suffix's breakpoint (for the tool loop, which follows at once) at 5 minutes, last
    assert _ttls(reqs[2].body) == ["1h", "1h", "1h", "5m"]
    assert reqs[2].body["messages"][-1]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert reqs[2].usage["cache_creation"]["ephemeral_1h_input_tokens"] > 0
    # ten minutes later the fourth turn reads what the third wrote for an hour (5-minute entries are gone)
    assert reqs[3].usage["cache_read_input_tokens"] >= 2048
    assert reqs[3].cache["hit_position"] is not None
    stored = json.loads(store.db.execute("SELECT usage FROM messages WHERE role = 'assistant' ORDER BY id DESC")
                        .fetchone()["usage"])
    assert stored["cache_write_1h"] == reqs[3].usage["cache_creation"]["ephemeral_1h_input_tokens"]
    assert chat.request("next").cache.reason.startswith("history cached for 1 h: your last turns came")


def test_a_continuous_session_keeps_every_breakpoint_at_five_minutes(store, searcher, anth, core_notes, paced):
    chat, reqs = _chat_turns(store, searcher, anth, paced, [0, 20, 40, 30])
    assert all("1h" not in _ttls(r.body) for r in reqs)
    assert all(r.usage["cache_read_input_tokens"] > 0 for r in reqs[1:])
    paced(25)
    assert chat.request("next").cache.reason == "history cached for 5 min: your last turns came 20–40 s apart"


# -- shown: `cairn context` and the Context viewer -------------------------------------------------------------
def test_cairn_context_says_how_long_the_history_is_cached_and_why(cairn_cmd, cli_env, anth, monkeypatch, searcher):
    """A chat whose turns came ten minutes apart, the last ten minutes ago: the real command says so."""
    import core.clock
    from core.graph.store import Store

    env = {k: v for k, v in cli_env.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    db = Path(env["CAIRN_HOME"]) / "cairn.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    start = datetime.now(timezone.utc) - timedelta(minutes=30)
    minutes = [0]
    monkeypatch.setattr(core.clock, "now", lambda: (start + timedelta(minutes=minutes[0])).isoformat(
        timespec="milliseconds").replace("+00:00", "Z"))
    with Store(db) as store:
        store.add_node("Otter habitats", "Otters live along rivers and coasts.")
        chat = new_chat(store, anthropic_provider(anth, cache_ttl="auto"), searcher)
        for k in range(3):
            minutes[0] = 10 * k
            anth.script.add(text(f"Reply {k}."))
            send(chat, f"question {k}")
    monkeypatch.undo()
    proc = subprocess.run([*cairn_cmd, "context", "and now?", "--chat", str(chat.id), "--provider", "anthropic"],
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "history cached for 1 h" in out and "your last turns came 10 min apart" in out
    proc = subprocess.run([*cairn_cmd, "context", "and now?", "--chat", str(chat.id), "--provider", "anthropic",
                           "--json"], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    cache = json.loads(proc.stdout)["cache"]
    assert cache["plan"]["history_ttl"] == "1h" and cache["policy"].startswith("history cached for 1 h")
    assert json.loads(proc.stdout)["body"]["messages"][-1]["content"][0]["cache_control"]["ttl"] == "1h"


async def test_the_context_viewer_shows_the_choice_for_the_open_chat(db_path, anth, monkeypatch, embedder):
    """Two turns sent in the app ten minutes apart: the viewer's summary gives the next request's TTL and why."""
    import core.clock
    import core.index.embedder
    from rich.text import Text

    from tui.app import CairnApp
    from tui.widgets.chat_pane import ChatInput, ChatPane
    from tui.widgets.context_viewer import ContextViewer
    from tui_support import wait_for

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    embedder.embed_one("loaded before the app starts")  # the first load prepares the model: not timed here
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anth.base_url)
    start = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)
    offset = [0.0]
    monkeypatch.setattr(core.clock, "now", lambda: (start + timedelta(seconds=offset[0])).isoformat(
        timespec="milliseconds").replace("+00:00", "Z"))

    class App(CairnApp):
        def watch_database(self) -> None:  # not under test: it refreshes the panes on every chat write
            pass

    app = App(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.services.config.chat.provider = "anthropic"
        pane, _ = await app.right_panes()
        for k in range(2):
            offset[0] += 600 if k else 0
            anth.script.add(text(f"Reply {k}."))
            await pilot.press("ctrl+l")
            app.query_one(ChatInput).insert(f"question {k}")
            await pilot.press("ctrl+j")
            await wait_for(pilot, lambda: len(anth.model_requests()) == k + 1 and not pane.streaming,
                           what=f"reply {k}")
        offset[0] += 600
        assert isinstance(pane, ChatPane) and pane.chat_id is not None
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)

        def summary() -> str:
            content = viewer.query_one("#viewer-summary").content
            return content.plain if isinstance(content, Text) else str(content)

        await wait_for(pilot, lambda: "history cached for" in summary(), what="the cache line")
        assert "history cached for 1 h" in summary() and "your last turns came 10 min apart" in summary()
