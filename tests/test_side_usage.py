"""Model requests that are not chat replies count in `cairn stats`, once each (core.chat.usage_log,
migration 3): the rolling summary, the citation judge, distil and integrate's drafts, against the fake
Anthropic server, whose reported usage is the reference. Also when such a request fails part way."""

from __future__ import annotations

import json

import pytest

from chat_support import _no_proxies, anth, anthropic_provider, config, new_chat, searcher, send  # noqa: F401
from test_distil import conversation, graph  # noqa: F401  (fixtures: a two-turn chat over three notes)
from core.ops import stats
from core.chat import usage_log
from fakes import http_error, stream_error, text

FIELDS = ("input", "output", "cache_read", "cache_write")


def normalised(reported: dict) -> dict:
    """The fake's usage (Anthropic's format) as core.providers.base.Usage counts it."""
    read, write = reported["cache_read_input_tokens"], reported["cache_creation_input_tokens"]
    return {"input": reported["input_tokens"] + read + write, "output": reported["output_tokens"],
            "cache_read": read, "cache_write": write}


def reported_total(srv) -> dict:
    """The sum of what the fake reported over every request it answered."""
    out = dict.fromkeys(FIELDS, 0)
    for rec in srv.requests:
        if rec.usage is not None:
            for f, v in normalised(rec.usage).items():
                out[f] += v
    return out


def anthropic_tokens(store) -> dict:
    t = stats.collect(store)["tokens_this_week"]["by_provider"].get("anthropic", {})
    return {f: t.get(f, 0) for f in FIELDS}


def by_purpose(store) -> dict:
    return stats.collect(store)["tokens_this_week"]["by_purpose"]


def side_rows(store, purpose: str) -> list[dict]:
    return [dict(r) for r in store.db.execute("SELECT * FROM sent_log WHERE purpose = ? ORDER BY id", (purpose,))]


# -- migration 3 ----------------------------------------------------------------------------------
def test_a_version_2_database_migrates_to_3_after_a_backup(tmp_path, monkeypatch):
    import sqlean

    import core.graph.db
    from core.graph.migrations import MIGRATIONS
    from core.graph.store import Store

    path = tmp_path / "v2.db"
    monkeypatch.setattr(core.graph.db, "MIGRATIONS", MIGRATIONS[:2])  # the schema before side-request usage
    with Store(path) as old:
        assert old.db.user_version == 2
        old.db.execute("INSERT INTO chats(title, provider, created_at, updated_at) VALUES ('c', 'anthropic', 'x', 'x')")
        old.db.execute("INSERT INTO sent_log(chat_id, provider, model, node_ids, created_at)"
                       " VALUES (1, 'anthropic', 'm', '[4]', '2026-01-01T00:00:00.000Z')")
        columns = {r[1] for r in old.db.execute("PRAGMA table_info(sent_log)")}
        assert "usage" not in columns and "purpose" not in columns
    monkeypatch.undo()

    with Store(path) as new:
        assert new.db.user_version == len(MIGRATIONS) >= 3  # and on to every later migration
        row = dict(new.db.execute("SELECT * FROM sent_log").fetchone())
        assert row["node_ids"] == "[4]" and row["usage"] is None and row["purpose"] is None  # a chat turn's row
        with pytest.raises(Exception, match="CHECK constraint failed"):
            new.db.execute("UPDATE sent_log SET usage = 'not json' WHERE id = 1")
        assert new.db.execute("SELECT usage FROM sent_log").fetchone()[0] is None
    raw = sqlean.connect(str(tmp_path / f"v2.db.before-v{len(MIGRATIONS)}.bak"))
    try:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 2
        assert raw.execute("SELECT node_ids FROM sent_log").fetchall() == [("[4]",)]
    finally:
        raw.close()


def test_an_unknown_purpose_is_refused_and_nothing_is_logged(store):
    with pytest.raises(ValueError, match="Unknown side-request purpose 'chat'"):
        usage_log.log_request(store, purpose="chat", provider="anthropic", model="m")
    assert store.db.execute("SELECT COUNT(*) FROM sent_log").fetchone()[0] == 0


# -- distil -----------------------------------------------------------------------------------------
def test_distil_tokens_count_once_on_its_own_sent_log_row(store, conversation, anth):
    from core.assist import distil

    c = conversation
    replies_before = stats.collect(store)["tokens_this_week"]["by_provider"]["anthropic"]["replies"]
    assert anthropic_tokens(store) == reported_total(anth) and by_purpose(store) == {}  # the chat turns alone
    anth.script.add(text('{"proposals": []}'))
    result = distil.propose(store, c["chat"].id, anthropic_provider(anth), never_send=(), searcher=c["chat"].searcher)
    assert result.usage == normalised(anth.last.usage)
    assert anthropic_tokens(store) == reported_total(anth)  # every request, each once
    assert by_purpose(store) == {"distil": {"requests": 1, **result.usage}}
    rows = side_rows(store, "distil")  # the row that names the nodes sent carries the usage: no second row
    assert len(rows) == 1 and json.loads(rows[0]["usage"]) == result.usage
    assert rows[0]["chat_id"] == c["chat"].id and json.loads(rows[0]["node_ids"]) == result.sent_node_ids
    assert store.db.execute("SELECT COUNT(*) FROM sent_log WHERE message_id IS NULL").fetchone()[0] == 1
    assert stats.collect(store)["tokens_this_week"]["by_provider"]["anthropic"]["replies"] == replies_before
    line = dict(stats.lines(stats.collect(store)))["Tokens, last 7 days, besides replies"]
    assert line == f"distil {result.usage['input']:,} sent, {result.usage['output']:,} received (1 request)"


def test_a_distil_request_that_fails_mid_reply_still_counts_what_it_used(store, conversation, anth):
    from core.assist import distil

    anth.script.add(text('{"proposals": [{"kind": "addition"', deltas=3), stream_error(after_deltas=1))
    with pytest.raises(distil.DistilError, match="could not distil"):
        distil.propose(store, conversation["chat"].id, anthropic_provider(anth), never_send=(),
                       searcher=conversation["chat"].searcher)
    [row] = side_rows(store, "distil")
    used = json.loads(row["usage"])
    reported = normalised(anth.last.usage)
    assert used["input"] == reported["input"] > 0 and used["cache_read"] == reported["cache_read"]
    assert by_purpose(store) == {"distil": {"requests": 1, **used}}


# -- the citation judge --------------------------------------------------------------------------------
def judged_chat(store, searcher, anth, graph):
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=config(check_citations="model"))
    anth.script.add(text(f"Mix browns and greens [NODE:{graph['compost']}]."))
    return chat


def test_the_citation_judge_tokens_count_once(store, searcher, anth, graph):
    from core.chat.focus import Focus

    chat = judged_chat(store, searcher, anth, graph)
    chat.set_focus(Focus((graph["compost"],), graph["compost"]))  # so the cited note was sent
    anth.script.add(text(json.dumps({"verdicts": [{"claim": 1, "verdict": "supported", "why": "It says so."}]})))
    send(chat, "How do I mix compost?")
    check = chat.last_reply.citation_check
    assert check.mode == "model" and check.error is None and check.items[0]["status"] == "ok"
    assert len(anth.requests) == 2 and check.usage == normalised(anth.last.usage)
    assert anthropic_tokens(store) == reported_total(anth)  # the reply and the judge, each once
    assert by_purpose(store) == {"citation_check": {"requests": 1, **check.usage}}
    [row] = side_rows(store, "citation_check")  # the judge's sent_log row, now with its usage
    assert json.loads(row["usage"]) == check.usage and json.loads(row["node_ids"]) == [graph["compost"]]
    user_id = store.db.execute("SELECT MIN(id) FROM messages WHERE chat_id = ?", (chat.id,)).fetchone()[0]
    assert row["message_id"] == user_id and row["chat_id"] == chat.id
    assert store.db.execute("SELECT COUNT(*) FROM sent_log WHERE chat_id = ?", (chat.id,)).fetchone()[0] == 2


def test_a_failed_citation_judge_is_a_request_that_used_no_tokens(store, searcher, anth, graph):
    from core.chat.focus import Focus

    chat = judged_chat(store, searcher, anth, graph)
    chat.set_focus(Focus((graph["compost"],), graph["compost"]))
    anth.script.add(http_error(500, retry_after=0.01), times=3)  # the first try and the SDK's two retries
    send(chat, "How do I mix compost?")
    check = chat.last_reply.citation_check
    assert check.error.startswith("citation check failed")
    assert by_purpose(store) == {"citation_check": {"requests": 1, "input": 0, "output": 0, "cache_read": 0,
                                                    "cache_write": 0}}
    assert anthropic_tokens(store) == reported_total(anth)  # the reply only: the server answered no judge


# -- the rolling summary ------------------------------------------------------------------------------
def chat_before_a_summary(store, searcher, anth, monkeypatch):
    import core.chat.conversation as chat_module

    chat = new_chat(store, anthropic_provider(anth), searcher)
    for i in range(5):
        anth.script.add(text(f"answer {i}"))
        send(chat, f"question {i} " + "padding " * 10)
    assert "summary" not in chat.metadata and by_purpose(store) == {}
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 100)
    return chat


def test_the_rolling_summary_tokens_count_once(store, searcher, anth, monkeypatch):
    chat = chat_before_a_summary(store, searcher, anth, monkeypatch)
    anth.script.add(text("## Decisions\n- none"))
    anth.script.add(text("answer 5"))
    send(chat, "question 5")
    assert chat.metadata["summary"] == "## Decisions\n- none"
    summary_req = anth.requests[-2]
    assert summary_req.body["system"][0]["text"].startswith("Summarise the conversation")
    assert anthropic_tokens(store) == reported_total(anth)
    assert by_purpose(store) == {"summary": {"requests": 1, **normalised(summary_req.usage)}}
    [row] = side_rows(store, "summary")
    # the row names the turn it was made for (the chat pane shows its tokens under that turn's reply)
    question_5 = store.db.execute("SELECT MAX(id) FROM messages WHERE chat_id = ? AND role = 'user'",
                                  (chat.id,)).fetchone()[0]
    assert row["chat_id"] == chat.id and row["message_id"] == question_5 and json.loads(row["node_ids"]) == []
    assert chat.last_reply.side_usage == {"summary": normalised(summary_req.usage)}
    assert stats.collect(store)["tokens_this_week"]["by_provider"]["anthropic"]["replies"] == 6


def test_a_summary_that_fails_mid_reply_still_counts_what_it_used(store, searcher, anth, monkeypatch):
    chat = chat_before_a_summary(store, searcher, anth, monkeypatch)
    anth.script.add(text("## Decisions\n- half", deltas=3), stream_error(after_deltas=1))
    anth.script.add(text("answer 5"))
    send(chat, "question 5")
    assert "summary" not in chat.metadata and "overloaded" in chat.metadata["summary_error"]
    [row] = side_rows(store, "summary")
    used, reported = json.loads(row["usage"]), normalised(anth.requests[-2].usage)
    assert used["input"] == reported["input"] > 0 and used["cache_write"] == reported["cache_write"]
    assert by_purpose(store) == {"summary": {"requests": 1, **used}}


# -- integrate ------------------------------------------------------------------------------------------
@pytest.fixture
def papers(store, indexer):
    notes = {
        "Transformers": "The transformer architecture uses self-attention to model sequences without recurrence.",
        "Attention Is All You Need": "The 2017 paper by Vaswani et al. introduced the transformer, built entirely "
                                     "on attention mechanisms for machine translation.",
        "BERT": "BERT is a bidirectional transformer encoder pretrained with masked language modelling.",
        "Sourdough bread": "Sourdough uses a wild yeast starter; long fermentation gives the bread its sour taste.",
    }
    ids = {title: store.add_node(title, body)["id"] for title, body in notes.items()}
    indexer.run()
    return ids


def test_integrate_draft_tokens_count_once(store, searcher, anth, papers):
    from core.assist.integrate import propose

    node = papers["Transformers"]
    offline = propose(store, searcher, node)
    ids = [p.target_id for p in offline]
    assert ids  # the premise: search found candidates, so a draft request is made
    anth.script.add(text(json.dumps([{"target_id": i, "explanation": f"Related to {i}.", "confidence": 0.5}
                                     for i in ids])))
    out = propose(store, searcher, node, provider=anthropic_provider(anth))
    assert out.drafted and len(anth.requests) == 1
    usage = normalised(anth.last.usage)
    assert anthropic_tokens(store) == reported_total(anth) == usage
    assert by_purpose(store) == {"integrate": {"requests": 1, **usage}}
    [row] = side_rows(store, "integrate")
    assert row["chat_id"] is None and json.loads(row["usage"]) == usage
    assert json.loads(row["node_ids"]) == [node, *ids]
    assert store.db.execute("SELECT COUNT(*) FROM sent_log").fetchone()[0] == 1
    assert stats.collect(store)["tokens_this_week"]["by_provider"]["anthropic"]["replies"] == 0
