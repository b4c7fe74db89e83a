"""Checked citations (issue 8, part 4): the parser, the check against what was actually sent (a full
Chat.send against the fake Anthropic server), storage and reopening, the optional model check (verdicts,
malformed JSON, a 500), `check_citations = "off"`, the chat pane's warning lines and `cairn ask`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chat_support import KEY, _no_proxies, anth, anthropic_provider, config, new_chat, searcher, send  # noqa: F401
from test_chat_cli import cli  # noqa: F401  (fixture: the cairn command with two notes)
from core.chat import citations
from core.chat.citations import CitationCheck, check, code_spans, parse, sentence_at
from fakes import http_error, text


def labels(text_: str) -> list[str]:
    return [c.label for c in parse(text_)]


# ------------------------------------------------------------------------------------------------
# the parser


@pytest.mark.parametrize("reply, expect", [
    ("Rivers [1] and coasts [2].", ["[1]", "[2]"]),
    ("Both [1, 3] and [2,4].", ["[1]", "[3]", "[2]", "[4]"]),
    ("Adjacent [1][2] forms.", ["[1]", "[2]"]),
    ('Nodes [NODE:12] and [NODE:7:"Worm \\"bins\\""] and [NODE:8:Bare title].', ["[NODE:12]", "[NODE:7]", "[NODE:8]"]),
    ("Mixed [NODE:3][4].", ["[NODE:3]", "[4]"]),
    ("Not citations: \\[1], [[2]], a link [3](https://x.org), [1000], [a], [NODE:x], [ 1 ].", []),
], ids=["single", "lists", "adjacent", "nodes", "mixed", "lookalikes"])
def test_parser_forms(reply, expect):
    assert labels(reply) == expect


def test_node_titles_are_decoded():
    cites = parse('[NODE:7:"Worm \\"bins\\""] [NODE:8:Bare title] [NODE:9:""] [NODE:10]')
    assert [(c.ref, c.title) for c in cites] == [(7, 'Worm "bins"'), (8, "Bare title"), (9, ""), (10, None)]


def test_citations_inside_code_are_ignored():
    reply = ("Use `a[1]` or ``b[`2`]`` [3].\n\n```python\nx = y[4]\nz = [NODE:5]\n```\n"
             "After the block [6].\n~~~\n[7]\n~~~\nA lone ` backtick [8].\n```\nunclosed [9]")
    assert labels(reply) == ["[3]", "[6]", "[8]"]
    spans = code_spans(reply)
    assert reply[spans[0][0]:spans[0][1]] == "`a[1]`"
    assert reply[spans[-1][0]:].startswith("```\nunclosed")  # an unclosed fence runs to the end


def test_a_fence_needs_its_own_kind_and_length_to_close():
    reply = "````\n```\n[1]\n````\n[2]"
    assert labels(reply) == ["[2]"]


@pytest.mark.parametrize("reply, at, sentence", [
    ("Otters swim. They eat fish [1]. Done.", "[1]", "They eat fish [1]."),
    ("Otters swim.[1] They eat fish.", "[1]", "Otters swim.[1]"),
    ("Otters swim. [1] [2] They eat fish.", "[2]", "Otters swim. [1] [2]"),
    ("Intro.\n- Otters live by rivers [1]\n- Seals by the sea", "[1]", "Otters live by rivers [1]"),
    ("No full stop at all [1]", "[1]", "No full stop at all [1]"),
], ids=["middle", "trailing-no-space", "trailing-several", "list-item", "no-stop"])
def test_the_sentence_of_a_citation(reply, at, sentence):
    assert sentence_at(reply, reply.index(at)) == sentence


# ------------------------------------------------------------------------------------------------
# the check, as a function


def test_check_flags_dangling_passages_and_nodes():
    reply = "A [1]. B [3]. C [NODE:5]. D [NODE:6]. E [NODE:99999999999999999999]. Again A [1]."
    result = check(reply, {"1": 10, "2": 11}, {5, 10, 11}, existing=lambda ids: {i for i in ids if i in (5, 6)})
    by = {(i["citation"], i["sentence"]): i for i in result.items}
    assert by[("[1]", "A [1].")]["status"] == "ok" and by[("[1]", "A [1].")]["node_id"] == 10
    assert by[("[3]", "B [3].")]["status"] == "dangling"
    assert by[("[NODE:5]", "C [NODE:5].")]["status"] == "ok"
    assert by[("[NODE:6]", "D [NODE:6].")]["why"] == "was not in the context sent"
    assert by[("[NODE:99999999999999999999]", "E [NODE:99999999999999999999].")]["why"] == "does not exist"
    assert len(result.items) == 6 and result.status == "problems"
    assert result.lines() == [
        "⚠ [3] was not among the passages sent with this question (passages sent: [1], [2])",
        "⚠ [NODE:6] was not in the context sent",
        "⚠ [NODE:99999999999999999999] does not exist",
    ]
    assert check("No citations here.", {}, set()).status == "none"
    assert check("Fine [1].", {1: 4}, set()).status == "ok"
    assert check("x [2]", {}, set()).lines() == ["⚠ [2] was not among the passages sent with this question "
                                                  "(no passages were sent)"]


def test_what_counts_as_sent():
    history = [
        {"role": "user", "content": [{"type": "text", "text": "About [NODE:1] please"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "See [NODE:2]"},  # the model's own words
                                          {"type": "tool_use", "id": "t", "name": "x", "input": {"id": 3}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": json.dumps(
            {"nodes": [{"id": 4, "title": "T"}], "edges": [{"id": 50, "from_node_id": 5, "to_node_id": 6}],
             "hits": [{"node_id": 7}], "answer": "as [NODE:8] says"})}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u", "content": "plain [NODE:9]"}]},
    ]
    assert citations.sent_node_ids([20], [21], [22], history) == {20, 21, 22, 1, 4, 5, 6, 7, 8, 9}


# ------------------------------------------------------------------------------------------------
# through Chat.send against the fake Anthropic server


@pytest.fixture
def garden(store, indexer):
    a = store.add_node("Compost guide", "Compost needs greens, browns, air and water. " * 4)
    b = store.add_node("Worm bins", "Worm bins turn kitchen scraps into compost quickly. " * 4)
    tax = store.add_node("Tax return", "File the tax return before the end of April.")
    indexer.run()
    return a["id"], b["id"], tax["id"]


QUESTION = "How do I make compost?"


def garden_chat(store, searcher, anth, garden, **chat_settings):
    """A chat with the worm-bin note open in Focus (so [NODE:b] was sent), the tax note nowhere."""
    from core.chat.focus import Focus

    a, b, tax = garden
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=config(**chat_settings))
    chat.set_focus(Focus((b,), b))
    sent = chat.request(QUESTION).node_ids
    assert b in sent and tax not in sent  # the premise
    return chat


def test_dangling_citations_are_flagged_stored_and_reloaded(store, searcher, anth, garden, embedder):
    from core.chat.conversation import Chat
    from core.search.searcher import Searcher
    from core.graph.store import Store

    a, b, tax = garden
    chat = garden_chat(store, searcher, anth, garden)
    anth.script.add(text(f"Mix greens and browns [1]. Add worms [NODE:{b}]. Mind the deadline [7]. "
                         f"Also file taxes [NODE:{tax}]. Or [NODE:4242].\n\nIn code `x[9]` is not one."))
    send(chat, QUESTION)
    reply = chat.last_reply
    passages = reply.citations["passages"]
    assert "1" in passages and "7" not in passages
    result = reply.citation_check
    status = {i["citation"]: i["status"] for i in result.items}
    assert status == {"[1]": "ok", f"[NODE:{b}]": "ok", "[7]": "dangling", f"[NODE:{tax}]": "dangling",
                      "[NODE:4242]": "dangling"}
    assert result.mode == "sent" and result.status == "problems"
    lines = result.lines()
    assert lines[0].startswith("⚠ [7] was not among the passages sent with this question")
    assert lines[1:] == [f"⚠ [NODE:{tax}] was not in the context sent", "⚠ [NODE:4242] does not exist"]
    assert reply.text.endswith("`x[9]` is not one.")  # the reply is never rewritten
    assert reply.citations == {"passages": passages, "nodes": sorted([b, tax, 4242])}
    # stored with the reply: the check sits beside the citations in messages.citations
    raw = json.loads(store.db.execute("SELECT citations FROM messages WHERE id = ?",
                                      (reply.message_id,)).fetchone()[0])
    assert raw["check"] == result.as_dict() and raw["passages"] == passages
    chat_id = chat.id
    store.close()
    with Store(store.path) as again:
        reopened = Chat(again, config(), anthropic_provider(anth), chat_id=chat_id, searcher=Searcher(again, embedder))
        last = reopened.messages()[-1]
        assert last["citations"] == reply.citations
        assert CitationCheck.from_dict(last["citation_check"]).lines() == lines
        assert reopened.messages()[0]["citation_check"] is None  # the user's message has none


def test_nodes_returned_by_tools_count_as_sent_in_this_and_later_turns(store, searcher, anth, garden):
    from fakes import tool_call

    a, b, tax = garden
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(tool_call("getNodesById", {"ids": [tax]}))
    anth.script.add(text(f"The tax note says April [NODE:{tax}]."))
    send(chat, "What does my tax note say?")
    assert chat.last_reply.citation_check.status == "ok"
    # a later turn: the tool result is still in the history as sent
    anth.script.add(text(f"As I said, April [NODE:{tax}]."))
    send(chat, "Remind me?")
    assert chat.last_reply.citation_check.status == "ok"


def test_a_dangling_citation_stays_dangling_when_the_model_repeats_it(store, searcher, anth, garden):
    a, b, tax = garden
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text(f"Taxes [NODE:{tax}]."))
    send(chat, "Anything due?")
    anth.script.add(text(f"Yes, taxes [NODE:{tax}]."))
    send(chat, "Are you sure?")
    assert [i["status"] for i in chat.last_reply.citation_check.items] == ["dangling"]


def test_check_off_stores_no_check(store, searcher, anth, garden):
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=config(check_citations="off"))
    anth.script.add(text("Nonsense [7] and [NODE:4242]."))
    send(chat, QUESTION)
    reply = chat.last_reply
    assert reply.citation_check is None and len(anth.requests) == 1
    raw = json.loads(store.db.execute("SELECT citations FROM messages WHERE id = ?",
                                      (reply.message_id,)).fetchone()[0])
    assert "check" not in raw and chat.messages()[-1]["citation_check"] is None


# ------------------------------------------------------------------------------------------------
# the model check


def model_chat(store, searcher, anth, garden):
    return garden_chat(store, searcher, anth, garden, check_citations="model")


def test_model_check_verdicts(store, searcher, anth, garden):
    a, b, tax = garden
    chat = model_chat(store, searcher, anth, garden)
    anth.script.add(text(f"Compost needs air and water [1]. Worms eat plastic [NODE:{b}]. Also [7]."))
    anth.script.add(text(json.dumps({"verdicts": [
        {"claim": 1, "verdict": "supported", "why": "The guide lists air and water."},
        {"claim": 2, "verdict": "unsupported", "why": "The note says scraps, not plastic."}]})))
    send(chat, QUESTION)
    reply = chat.last_reply
    result = reply.citation_check
    assert len(anth.requests) == 2 and result.mode == "model" and result.status == "problems"
    status = {i["citation"]: (i["status"], i["why"]) for i in result.items}
    assert status["[1]"] == ("ok", "The guide lists air and water.")
    assert status[f"[NODE:{b}]"] == ("unsupported", "The note says scraps, not plastic.")
    assert status["[7]"][0] == "dangling"  # not sent: never given to the judge
    assert result.lines()[0] == (f"✗ [NODE:{b}] does not support: ‘Worms eat plastic [NODE:{b}].’ "
                                 "(The note says scraps, not plastic.)")
    assert result.usage["output"] > 0
    # the judge saw the passage exactly as sent and each claim's sentence; the streamed text is unchanged
    judge = anth.last.body
    prompt = judge["messages"][-1]["content"][0]["text"]
    passage_1 = [p for p in chat.request(QUESTION).suffix.passages if p.n == 1][0]
    assert passage_1.text.strip() in prompt and "Claim 1: cites [1]: Compost needs air and water [1]." in prompt
    # the passage text given to the judge is read back from the user message's stored `sent`
    user_sent = json.loads(store.db.execute("SELECT sent FROM messages WHERE chat_id = ? AND role = 'user'",
                                            (chat.id,)).fetchone()[0])
    as_sent = citations.passage_texts(user_sent)["1"]
    assert as_sent.startswith(f"[1] [NODE:{a}:") and as_sent.endswith(passage_1.text.strip())
    assert f"--- [1] ---\n{as_sent}\n" in prompt
    assert "Claim 3" not in prompt and "[7]" not in prompt
    assert "verdicts" in json.dumps(judge["system"]) and not judge.get("tools")
    assert reply.text.startswith("Compost needs air and water [1].")
    stored = chat.messages()[-1]
    assert stored["citation_check"] == result.as_dict() and stored["text"] == reply.text
    # the judge request is in sent_log (it sent those nodes' text)
    logs = [json.loads(r[0]) for r in store.db.execute(
        "SELECT node_ids FROM sent_log WHERE chat_id = ? ORDER BY id", (chat.id,))]
    assert len(logs) == 2 and set(logs[1]) == {reply.citations["passages"]["1"], b}


def test_passage_spans_read_back_exactly_what_was_sent():
    from core.providers.request import Passage

    passages = [Passage(1, 10, "A", [], "  first text\n", 0.9), Passage(2, 11, "B", [], "second", 0.8),
                Passage(3, 12, "C", [], "never rendered", 0.7)]
    suffix = ('[Focused nodes]\nfirst text, second\n\n[Retrieved passages — cite as [N]]\n\n[1] [NODE:10:"A"]\nfirst text'
              '\n\n[2] [NODE:11:"B"] › H\nsecond\n\n[Context — current date/time: x]')
    spans = citations.passage_spans(suffix, passages)
    texts = citations.passage_texts({"suffix": suffix, "passage_spans": spans})
    assert texts == {"1": '[1] [NODE:10:"A"]\nfirst text', "2": '[2] [NODE:11:"B"] › H\nsecond'}
    assert citations.passage_texts(None) == {} and citations.passage_texts({"suffix": "x"}) == {}
    # a cited passage whose text cannot be read back is left unchecked, and says so
    result = check("Claim [3].", {"3": 12}, set())
    prompt, covered = citations.judge_request(result.items, {f"[{n}]": t for n, t in texts.items()})
    assert covered == []
    citations.apply_verdicts(result, covered, [])
    assert result.lines() == ["· [3] not checked: its text could not be given to the model"]


def test_model_check_accepts_a_fenced_answer_and_unclear(store, searcher, anth, garden):
    chat = model_chat(store, searcher, anth, garden)
    anth.script.add(text("Compost needs patience [1]."))
    anth.script.add(text('```json\n{"verdicts": [{"claim": 1, "verdict": "unclear", "why": "Not said."}]}\n```'))
    send(chat, QUESTION)
    result = chat.last_reply.citation_check
    assert result.items[0]["status"] == "unclear" and result.status == "problems"
    assert result.lines() == ["? [1] may not support: ‘Compost needs patience [1].’ (Not said.)"]


@pytest.mark.parametrize("answer, reason", [
    ("All citations look fine to me!", "the model's answer is not JSON"),
    ('{"verdicts": [{"claim": 1, "verdict": "maybe"}]}', "'maybe' is not supported, unsupported or unclear"),
    ('{"verdicts": [{"claim": 1, "verdict": "supported"}]}', "no verdict for claim 2"),
    ('{"verdicts": [{"claim": 3, "verdict": "supported"}]}', "a verdict for no claim asked"),
    ('{"results": []}', 'no "verdicts" list'),
], ids=["prose", "bad-verdict", "missing-claim", "unknown-claim", "no-list"])
def test_a_malformed_judge_answer_is_a_failed_check(store, searcher, anth, garden, answer, reason):
    a, b, tax = garden
    chat = model_chat(store, searcher, anth, garden)
    anth.script.add(text(f"Greens and browns [1]. Worms [NODE:{b}]."))
    anth.script.add(text(answer))
    send(chat, QUESTION)
    reply = chat.last_reply
    result = reply.citation_check
    assert reply.status == "complete" and result.status == "failed"
    assert result.error.startswith("citation check failed: ") and reason in result.error
    assert result.lines()[-1] == result.error
    assert all(i["status"] == "ok" for i in result.items)  # none judged; the status says failed, not ok
    assert chat.messages()[-1]["citation_check"]["status"] == "failed"


def test_a_server_error_during_the_model_check_is_a_failed_check(store, searcher, anth, garden):
    chat = model_chat(store, searcher, anth, garden)
    anth.script.add(text("Greens and browns [1]. Mind [7]."))
    anth.script.add(http_error(500, retry_after=0.01), times=3)  # the first try and the SDK's two retries
    send(chat, QUESTION)
    reply = chat.last_reply
    result = reply.citation_check
    assert reply.status == "complete" and reply.error is None  # the reply itself is fine
    assert result.status == "failed" and result.error.startswith("citation check failed: ")
    assert "500" in result.error
    assert result.lines()[0].startswith("⚠ [7] was not among") and result.lines()[-1] == result.error
    # the chat goes on
    anth.script.add(text("Fine."))
    anth.script.add(text("{}"))  # not asked: a reply without citations has nothing to judge
    send(chat, "thanks")
    assert chat.last_reply.citation_check.status == "none" and len(anth.requests) == 5


def test_model_check_skips_incomplete_replies_and_says_so(store, searcher, anth, garden):
    from fakes import cut_after

    chat = model_chat(store, searcher, anth, garden)
    anth.script.add(text("Greens and browns [1] and then more words", deltas=6), cut_after(3))
    send(chat, QUESTION)
    reply = chat.last_reply
    assert reply.status == "incomplete" and len(anth.requests) == 1
    assert reply.citation_check.note == "citations not judged by the model: the reply is incomplete"
    assert reply.citation_check.lines()[-1] == "· citations not judged by the model: the reply is incomplete"


def test_model_check_with_the_offline_provider_says_it_did_not_run(store, searcher, indexer):
    from core.providers.offline import OfflineProvider

    store.add_node("Compost guide", "Compost needs greens, browns, air and water. " * 4)
    indexer.run()
    chat = new_chat(store, OfflineProvider(), searcher, cfg=config(check_citations="model"))
    send(chat, QUESTION)
    result = chat.last_reply.citation_check
    assert result.mode == "model" and [i["status"] for i in result.items] == ["ok"]
    assert result.lines() == ["· citations not judged by a model: the offline provider quotes the passages themselves"]


def test_the_setting_is_validated(tmp_path):
    from core.config import ConfigError, load

    path = tmp_path / "config.toml"
    path.write_text('[chat]\ncheck_citations = "always"\n')
    with pytest.raises(ConfigError, match=r"config.toml.*chat.check_citations.*'always'.*off, sent, model"):
        load(path)
    path.write_text('[chat]\ncheck_citations = "model"\n')
    assert load(path).chat.check_citations == "model"
    assert load(tmp_path / "missing.toml").chat.check_citations == "sent"


# ------------------------------------------------------------------------------------------------
# the chat pane (Pilot, the real app against the fake Anthropic server)


async def test_the_chat_pane_shows_the_problems_and_does_not_link_dangling_citations(db_path, store, indexer,
                                                                                  embedder, monkeypatch):
    import core.index.embedder
    from fakes import FakeAnthropic
    from test_tui_chat import SIZE, RecordingApp, metas, plain, type_and_send
    from tui_support import wait_for
    from tui.widgets.chat_pane import SourceList

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    starter = store.add_node("Sourdough starter", "Feed the sourdough starter with flour and water every day.")["id"]
    indexer.run()
    with FakeAnthropic() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        srv.script.add(text(f"Feed it daily [NODE:{starter}]. Bake at noon [5]. See [NODE:4242]."))
        app = RecordingApp(db_path, first_run_prompt=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.services.config.chat.provider = "anthropic"
            pane = await type_and_send(pilot, app, "How do I feed a sourdough starter?")
            await wait_for(pilot, lambda: metas(app), what="the reply")
            expected = ["⚠ [5] was not among the passages sent with this question",
                        "⚠ [NODE:4242] does not exist"]
            await wait_for(pilot, lambda: app.query(".citation-check"), what="the citation check lines")
            shown = plain(app.query_one(".citation-check")).splitlines()
            assert [line.split(" (passages sent")[0] for line in shown] == expected
            source = pane.query(".reply").last().source
            assert f"(cairn:node/{starter})" in source  # a citation that was sent is a link
            assert "cairn:node/4242" not in source and "\\[NODE:4242\\]" in source  # a dangling one is not
            assert "[5]" in source and "\\[5\\]" not in source
            sources = app.query(SourceList).last()
            labels = [str(o.prompt) for o in sources.options]
            assert "[NODE:4242] ⚠ does not exist" in labels
            assert sources.node_ids[labels.index("[NODE:4242] ⚠ does not exist")] is None  # opens nothing
            assert any(label.endswith("] Sourdough starter") for label in labels)  # a sent node is listed as ever
            chat_id = pane.chat_id

            await pilot.press("f5")
            assert not app.query(".citation-check")
            pane.load_chat(chat_id)  # reopened: the same lines under the reply
            await wait_for(pilot, lambda: app.query(".citation-check"), what="the reopened chat's check")
            again = plain(app.query_one(".citation-check")).splitlines()
            assert again == shown
            assert "cairn:node/4242" not in pane.query(".reply").last().source
        assert srv.errors == []


# ------------------------------------------------------------------------------------------------
# cairn ask


def test_cairn_ask_prints_the_problems_and_json_includes_the_check(cli, anth):
    from test_chat_cli import run

    cmd, env, db, a, b = cli
    env = {**env, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anth.base_url}
    reply = f"Otters live along rivers [NODE:{a}] and coasts [8]. See [NODE:999]."
    anth.script.add(text(reply))
    rc, out, err = run(cmd, env, "ask", "Where do otters live?", "--provider", "anthropic", "--focus", a)
    assert rc == 0, err
    assert reply + "\n\n" in out  # the reply as streamed, then a blank line, then the problems
    after = out.split(reply, 1)[1]
    assert "⚠ [8] was not among the passages sent with this question" in after
    assert "⚠ [NODE:999] does not exist" in after and f"[NODE:{a}] " not in after.split("Sources")[0]

    anth.script.add(text(reply))
    rc, out, err = run(cmd, env, "ask", "Where do otters live?", "--provider", "anthropic", "--focus", a, "--json")
    assert rc == 0, err
    result = json.loads(out)
    check_ = result["citation_check"]
    assert check_["mode"] == "sent" and check_["status"] == "problems"
    assert {i["citation"]: i["status"] for i in check_["items"]} == {f"[NODE:{a}]": "ok", "[8]": "dangling",
                                                                      "[NODE:999]": "dangling"}
    assert result["text"] == reply


def test_cairn_ask_says_it_checks_citations_and_counts_the_judges_tokens(cli, anth):
    from test_chat_cli import run
    from test_side_usage import normalised

    cmd, env, db, a, b = cli
    (Path(env["CAIRN_HOME"]) / "config.toml").write_text('[chat]\ncheck_citations = "model"\n', encoding="utf-8")
    env = {**env, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anth.base_url}
    reply = f"Otters live along rivers [NODE:{a}]."
    anth.script.add(text(reply))
    anth.script.add(text(json.dumps({"verdicts": [{"claim": 1, "verdict": "supported", "why": "It says so."}]})))
    rc, out, err = run(cmd, env, "ask", "Where do otters live?", "--provider", "anthropic", "--focus", a)
    assert rc == 0, err
    assert "[checking citations… Ctrl-C skips; the reply is kept]" in err
    judge = normalised(anth.model_requests()[-1].usage)
    assert judge["input"] > 0
    usage_line = out.strip().splitlines()[-1]
    assert f" · + citation check {judge['input']} in/{judge['output']} out · $" in usage_line  # then its cost

    anth.script.add(text(reply))
    anth.script.add(text(json.dumps({"verdicts": [{"claim": 1, "verdict": "supported", "why": "It says so."}]})))
    rc, out, err = run(cmd, env, "ask", "Where do otters live?", "--provider", "anthropic", "--focus", a, "--json")
    assert rc == 0, err
    side = json.loads(out)["side_usage"]["citation_check"]
    assert side == normalised(anth.model_requests()[-1].usage)
