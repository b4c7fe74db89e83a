"""Skills (issue 8): the loader (shipped + user override, bad files skipped with a warning), the catalog
in the orchestrator's snapshot, activateSkill through Chat.send against the fake Anthropic server,
re-attachment after a rolling summary, and the `cairn skills` verbs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from chat_support import (  # noqa: F401  (fixtures)
    FIXED_NOW,
    SONNET,
    SONNET_1024,
    _no_proxies,
    anth,
    oai,
    anthropic_provider,
    config,
    new_chat,
    openai_provider,
    searcher,
    send,
    strip_cc,
)
from core.chat import conversation as chat_module
from core.agent import profiles
from core.agent import skills
from core.chat.conversation import Chat
from core.chat.context import ContextEngine
from core.providers.request import ContextRequest, Snapshot
from core.chat.focus import Focus
from core.errors import InvalidInput, NotFound
from core.providers.base import Turn
from fakes import text, tool_call

SHIPPED = ["integrate", "summarise-source", "weekly-review"]


def user_dir() -> Path:
    folder = skills.user_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_skill(name: str, description: str = "A test skill.", body: str = "Do the thing.", *,
                folder: Path | None = None, file_name: str | None = None) -> Path:
    path = (folder or user_dir()) / (file_name or f"{name}.md")
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------
# loader


def test_the_shipped_skills_load_sorted_with_no_warning():
    catalog = skills.load()
    assert catalog.names == SHIPPED and catalog.warnings == []
    for s in catalog.skills.values():
        assert s.origin == "shipped" and not s.overrides and s.path.parent == skills.BUILTIN_DIR
        assert s.description and "\n" not in s.description and len(s.description) <= skills.MAX_DESCRIPTION_CHARS
        assert len(s.instructions) > 200
    # what the issue asks each shipped skill to do
    assert "createNode" in catalog.get("summarise-source").instructions
    assert "sqliteQuery" in catalog.get("weekly-review").instructions
    assert "7 days" in catalog.get("weekly-review").description
    integrate = catalog.get("integrate").instructions
    assert "queryEdges" in integrate and "createEdge" in integrate and "confirm" in integrate


def test_a_user_skill_overrides_the_shipped_one_and_adds_new_ones():
    write_skill("weekly-review", "My own review.", "Only look at #work nodes.")
    write_skill("daily-log", "Write today's log.", "Summarise today.")
    catalog = skills.load()
    assert catalog.names == ["daily-log", "integrate", "summarise-source", "weekly-review"]
    review = catalog.get("weekly-review")
    assert review.origin == "user" and review.overrides and review.instructions == "Only look at #work nodes."
    assert review.path == skills.user_dir() / "weekly-review.md"
    assert catalog.get("daily-log").origin == "user" and not catalog.get("daily-log").overrides
    with pytest.raises(NotFound, match="There is no skill 'nope'; the skills are: daily-log, integrate"):
        catalog.get("nope")


def test_frontmatter_values_may_hold_colons_and_quotes_and_other_keys():
    folder = user_dir()
    (folder / "colon.md").write_text(
        "\ufeff---\nname: \"colon\"\ndescription: Review: the week, then plan\ntags:\n  - a\nauthor: me\n---\n\nBody.\n",
        encoding="utf-8")
    (folder / "notes.txt").write_text("not a skill", encoding="utf-8")  # not .md: ignored
    (folder / "dir.md").mkdir()  # a folder: ignored
    catalog = skills.load()
    assert catalog.warnings == []
    s = catalog.get("colon")
    assert s.description == "Review: the week, then plan" and s.instructions == "Body."
    assert "notes" not in catalog.names and "dir" not in catalog.names


BAD_FILES = {
    "not-utf8": (b"---\nname: not-utf8\ndescription: x\n---\ncaf\xe9\n", "not valid UTF-8 (byte 0xe9 at offset 41)"),
    "binary": (b"---\nname: binary\ndescription: x\n---\n\x00\x01\x02", "NUL bytes"),
    "too-large": (b"---\nname: too-large\ndescription: x\n---\n" + b"a" * (64 * 1024), "a skill file is at most 64 KB"),
    "no-frontmatter": (b"# Just a heading\nSome text.\n", "no frontmatter"),
    "no-name": (b"---\ndescription: x\n---\nBody\n", "the frontmatter has no name"),
    "unclosed": (b"---\nname: unclosed\ndescription: x\nBody\n", "opened by '---' on line 1 is never closed"),
    "empty-frontmatter": (b"---\n---\nBody\n", "the frontmatter has no name"),
    "no-description": (b"---\nname: no-description\n---\nBody\n", "has no description"),
    "blank-description": (b"---\nname: blank-description\ndescription:   \n---\nBody\n", "has no description"),
    "Bad_Name": (b"---\nname: Bad_Name\ndescription: x\n---\nBody\n", "'Bad_Name' is not a valid skill name"),
    "mismatch": (b"---\nname: other-name\ndescription: x\n---\nBody\n", "differs from the file name; call the file other-name.md"),
    "no-body": (b"---\nname: no-body\ndescription: x\n---\n   \n", "has no instructions"),
    "two-lines": (b"---\nname: two-lines\ndescription: first\n  second line\n---\nBody\n", "write the description on one line"),
    "not-key-value": (b"---\nname: not-key-value\njust words\n---\nBody\n", "line 3: the frontmatter takes 'key: value' lines"),
}


@pytest.mark.parametrize("stem", list(BAD_FILES))
def test_a_bad_skill_file_is_skipped_with_a_clear_warning(stem):
    data, reason = BAD_FILES[stem]
    path = user_dir() / f"{stem}.md"
    path.write_bytes(data)
    write_skill("good-one")
    catalog = skills.load()  # never raises for a bad file
    assert catalog.names == ["good-one", *SHIPPED]
    assert len(catalog.warnings) == 1
    warning = catalog.warnings[0]
    assert warning.startswith(f"skipped {path}") and reason in warning, warning
    assert path.read_bytes() == data  # nothing is changed or lost
    with pytest.raises(InvalidInput, match="skill"):
        skills.read_file(path)


def test_a_broken_user_override_leaves_the_shipped_skill_in_place():
    (user_dir() / "integrate.md").write_text("---\nname: integrate\n---\nno description\n", encoding="utf-8")
    catalog = skills.load()
    assert catalog.get("integrate").origin == "shipped"
    assert catalog.warnings and "integrate.md" in catalog.warnings[0] and "no description" in catalog.warnings[0]


@pytest.mark.parametrize("name", ["a", "weekly-review", "x2", "2024-review"])
def test_valid_names(name):
    assert skills.check_name(name) == name


@pytest.mark.parametrize("name", ["", "Weekly", "weekly review", "weekly_review", "-x", "x-", "a--b", "../x", "é",
                                  "a" * 65])
def test_invalid_names_say_what_a_name_is(name):
    with pytest.raises(InvalidInput, match="lowercase letters, digits and hyphens"):
        skills.check_name(name)


# ------------------------------------------------------------------------------------------------
# the catalog in the snapshot


def engine(store, searcher, agent="orchestrator"):
    return ContextEngine(store, searcher, profiles.get(agent))


def variables():
    return {"user_name": "Ada", "chat_id": "1", "agent": "orchestrator", "model": SONNET}


def test_the_catalog_is_capped_and_descriptions_are_cut():
    folder = user_dir()
    for i in range(45):
        write_skill(f"s{i:02d}", "word " * 40, folder=folder)
    text_ = skills.catalog_text(skills.load())
    lines = text_.splitlines()
    assert lines[0] == skills.CATALOG_HEADING
    entries = [ln for ln in lines if ln.startswith("- ") and " — " in ln]
    assert len(entries) == skills.MAX_CATALOG
    assert entries[0].startswith("- integrate — ")  # sorted by name: shipped ones first here
    assert all(len(e.split(" — ", 1)[1]) <= skills.MAX_DESCRIPTION_CHARS for e in entries)
    assert entries[-1].split(" — ", 1)[1].endswith("…")
    assert "- … 8 more not listed (activateSkill loads any by name)" in lines
    assert "## Workflows" in text_ and "Integrate a node" in text_ and "Distil a chat" in text_
    assert skills.catalog_text(skills.load()) == text_  # deterministic


def test_orchestrators_carry_the_catalog_as_their_own_cached_block(store, searcher):
    snap = engine(store, searcher).snapshot(variables())
    assert snap.skills.startswith(skills.CATALOG_HEADING)
    for name in SHIPPED:
        assert f"- {name} — " in snap.skills
    assert "Do the thing" not in snap.skills  # names and descriptions only
    easy = engine(store, searcher, "easy").snapshot(variables())
    assert easy.skills == snap.skills
    for name in ("worker", "planner"):
        assert engine(store, searcher, name).snapshot(variables()).skills == ""
    req = ContextRequest(snap, [], "hello", engine(store, searcher).suffix("hello", now=FIXED_NOW), SONNET)
    blocks = req.blocks()
    assert [b.name for b in blocks][:3] == ["tools", "system", "skills"]
    assert blocks[2].cached and blocks[2].text == snap.skills
    assert "activateSkill" in blocks[0].text and "activateSkill" not in blocks[1].text
    assert Snapshot.from_json(snap.as_json()) == snap
    worker = engine(store, searcher, "worker").snapshot(variables())
    assert "skills" not in [b.name for b in ContextRequest(worker, [], "hi", req.suffix, SONNET).blocks()]


def test_tools_order_appends_activate_skill_for_orchestrators_only():
    # Appended in the order they came (the tool list is part of the cached prefix): activateSkill, then
    # captureUrl (tests/test_capture_web.py).
    for name in ("orchestrator", "easy"):
        assert profiles.get(name).tools[-2:] == ("activateSkill", "captureUrl")
        assert profiles.get(name).tools[:-2] == profiles.READ_TOOLS + profiles.WRITE_TOOLS + ("delegate",)
    for name in ("worker", "planner"):
        assert "activateSkill" not in profiles.get(name).tools


def test_the_mcp_server_does_not_offer_activate_skill():
    # Skills are part of a Cairn conversation (recorded in the chat, re-attached after its summary);
    # an MCP client has no such conversation, so the MCP tool list stays as it was.
    from core.agent import mcp_server

    assert "activateSkill" not in mcp_server.TOOLS
    assert [t["name"] for t in mcp_server.tool_definitions()] == list(mcp_server.TOOLS)


def test_the_catalog_is_fixed_per_chat_and_a_new_skill_appears_in_the_next_chat(store, searcher, anth):
    provider = anthropic_provider(anth)
    chat = new_chat(store, provider, searcher)
    body1 = provider.body(Turn(chat.request("hi"), [], chat.chat_key))
    assert body1["system"][1]["text"] == chat.snapshot.skills  # system 2, after the base + instructions
    write_skill("late-skill", "Added during the chat.")
    body2 = provider.body(Turn(chat.request("hi"), [], chat.chat_key))
    assert body2["system"] == body1["system"] and body2["tools"] == body1["tools"]
    reopened = Chat(store, config(), provider, chat_id=chat.id, searcher=searcher)
    assert "late-skill" not in reopened.snapshot.skills
    assert "- late-skill — Added during the chat." in new_chat(store, provider, searcher).snapshot.skills


def test_a_chat_saved_before_skills_existed_still_opens(store, searcher, anth):
    provider = anthropic_provider(anth)
    chat = new_chat(store, provider, searcher)
    meta = dict(chat.metadata)
    old = dict(meta["snapshot"])
    old.pop("skills")
    meta["snapshot"] = old
    store.db.execute("UPDATE chats SET metadata = ? WHERE id = ?", (json.dumps(meta), chat.id))
    reopened = Chat(store, config(), provider, chat_id=chat.id, searcher=searcher)
    assert reopened.snapshot.skills == ""
    req = reopened.request("hello")
    assert "skills" not in [b.name for b in req.blocks()]
    anth.script.add(text("Hello."))
    send(reopened, "hello")
    assert reopened.last_reply.status == "complete"
    assert [b["text"][:20] for b in anth.last.body["system"]] == [reopened.snapshot.system[:20]] + [
        b["text"][:20] for b in anth.last.body["system"][1:]]
    assert all(not b["text"].startswith(skills.CATALOG_HEADING) for b in anth.last.body["system"])


# ------------------------------------------------------------------------------------------------
# activateSkill through Chat.send


def tool_result(body: dict) -> dict:
    return [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"][0]


def test_activate_skill_loads_the_text_once_and_records_it(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text("Let me load it."), tool_call("activateSkill", {"name": "weekly-review"}))
    anth.script.add(text("Here is your week."))
    send(chat, "Review my week")
    result = tool_result(anth.last.body)
    review = skills.load().get("weekly-review")
    assert "is_error" not in result
    assert result["content"] == skills.activation_text(review)
    assert result["content"].startswith("# Skill: weekly-review\n") and review.instructions in result["content"]
    assert chat.metadata["active_skills"] == ["weekly-review"]
    assert chat.metadata["skill_texts"]["weekly-review"]["text"] == result["content"]
    assert [t["name"] for t in anth.last.body["tools"]][-2:] == ["activateSkill", "captureUrl"]
    # a second activation: no second copy
    anth.script.add(tool_call("activateSkill", {"name": "weekly-review"}))
    anth.script.add(text("Still following it."))
    send(chat, "And again?")
    again = tool_result(anth.last.body)
    assert "already active" in again["content"] and review.instructions not in again["content"]
    assert json.dumps(anth.last.body).count("Leave out type = 'memory' nodes") == 1
    assert chat.metadata["active_skills"] == ["weekly-review"]
    # the record survives a reopen
    reopened = Chat(store, config(), anthropic_provider(anth), chat_id=chat.id, searcher=searcher)
    assert reopened.metadata["active_skills"] == ["weekly-review"]


def test_an_unknown_skill_is_an_error_listing_the_skills(store, searcher, anth):
    write_skill("my-skill")
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(tool_call("activateSkill", {"name": "weekly-reveiw"}))
    anth.script.add(text("Sorry."))
    send(chat, "Review my week")
    result = tool_result(anth.last.body)
    assert result["is_error"] is True
    assert result["content"] == ("There is no skill 'weekly-reveiw'; the skills are: integrate, my-skill, "
                                 "summarise-source, weekly-review.")
    assert "active_skills" not in chat.metadata
    assert chat.last_reply.status == "complete"


def test_a_long_skill_is_cut_at_8000_characters_saying_so(store, searcher, anth):
    body = "".join(f"Step {i}: do something useful with the graph.\n" for i in range(400))  # ~18,000 chars
    write_skill("long-one", "Very long.", body)
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(tool_call("activateSkill", {"name": "long-one"}))
    anth.script.add(text("OK."))
    send(chat, "go")
    content = tool_result(anth.last.body)["content"]
    assert f"[… skill text truncated: {len(body.strip()):,} characters, the first 8,000 shown]" in content
    assert len(content) < skills.MAX_SKILL_CHARS + 200 and "Step 0:" in content and "Step 399:" not in content


def test_a_worker_cannot_activate_skills(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher, agent="worker")
    assert "activateSkill" not in [t["name"] for t in anthropic_provider(anth).body(
        Turn(chat.request("x"), [], chat.chat_key)).get("tools", [])]
    anth.script.add(tool_call("activateSkill", {"name": "integrate"}))
    anth.script.add(text("OK."))
    send(chat, "go")
    assert "not available to this agent" in tool_result(anth.last.body)["content"]


# ------------------------------------------------------------------------------------------------
# re-attachment after the rolling summary


def filler_turns(chat, anth, start: int, count: int) -> None:
    for i in range(start, start + count):
        anth.script.add(text(f"answer {i}"))
        send(chat, f"question {i} " + "padding " * 10)


def test_active_skills_are_reattached_after_the_summary_byte_identically(store, searcher, anth, monkeypatch):
    # A model caching from 1,024 tokens: this conversation's prefix (~1,500) is below sonnet-4-6's 2,048.
    chat = new_chat(store, anthropic_provider(anth, model=SONNET_1024), searcher)
    anth.script.add(tool_call("activateSkill", {"name": "integrate"}))
    anth.script.add(text("Integrating."))
    send(chat, "Integrate my note")
    marker = "Read the node whole with getNodesById"
    skill_text = chat.metadata["skill_texts"]["integrate"]["text"]
    assert json.dumps(anth.last.body).count(marker) == 1
    filler_turns(chat, anth, 1, 4)
    assert "summary" not in chat.metadata
    assert json.dumps(anth.last.body).count(marker) == 1  # still verbatim in the history
    # Force a summary: it replaces what precedes the last 4 exchanges, the one that activated the skill.
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 100)
    anth.script.add(text("## Decisions\n- integrate the note\n## Open questions\n- none"))
    anth.script.add(text("answer 5"))
    send(chat, "question 5")
    summary_req, turn_req = anth.requests[-2:]
    assert summary_req.body["system"][0]["text"].startswith("Summarise the conversation")
    assert 'assistant called activateSkill({"name": "integrate"})' in summary_req.body["messages"][0]["content"][0]["text"]
    first = turn_req.body["messages"][0]["content"]
    assert first[0]["text"].startswith("[Summary of the earlier conversation]\n<untrusted id=") and '">\n## Decisions' in first[0]["text"]
    assert first[1]["text"] == ("[Active skills, re-attached after the summary: keep following them]\n\n" + skill_text)
    assert all(b.get("type") != "tool_result" or b["content"] != skill_text
               for m in turn_req.body["messages"] for b in m["content"])  # the original result is gone
    assert json.dumps(turn_req.body).count(marker) == 1  # exactly once
    assert chat.metadata["skills_reattached"] == ["integrate"] and chat.metadata["skills_dropped"] == []
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 24_000)  # no second summary from here
    # Two consecutive requests: the earlier part is byte-identical (the cache reads it).
    anth.script.add(text("answer 6"))
    send(chat, "question 6")
    next_req = anth.last
    assert "summary" in chat.metadata and len([r for r in anth.requests if "tools" not in r.body]) == 1
    n = len(turn_req.body["messages"])
    # everything up to the end of the previous user text (the suffix after it is never stored)
    assert strip_cc(next_req.body["messages"][:n - 1]) == strip_cc(turn_req.body["messages"][:-1])
    assert strip_cc(next_req.body["messages"][n - 1]["content"]) == strip_cc(turn_req.body["messages"][-1]["content"][:1])
    assert next_req.body["system"] == turn_req.body["system"] and next_req.body["tools"] == turn_req.body["tools"]
    # and the fake server (no kinder than the real one) read that prefix, summary and skills included, from cache
    assert next_req.cache["hit_position"] is not None
    assert next_req.usage["cache_read_input_tokens"] >= 0.9 * next_req.cache["total_tokens"]
    assert json.dumps(next_req.body).count(marker) == 1
    # the skill is still active (re-attached): a second activation adds no copy
    anth.script.add(tool_call("activateSkill", {"name": "integrate"}))
    anth.script.add(text("ok"))
    send(chat, "use integrate again")
    assert "already active" in tool_result(anth.last.body)["content"]
    assert json.dumps(anth.last.body).count(marker) == 1
    # and the summary with its skills survives a reopen
    again = Chat(store, config(), anthropic_provider(anth), chat_id=chat.id, searcher=searcher)
    assert again.history()[0] == strip_cc(turn_req.body["messages"][0])


def test_reattachment_is_bounded_oldest_dropped_first(store, searcher, anth, monkeypatch):
    for name in ("big-a", "big-b", "big-c"):
        write_skill(name, f"Big skill {name}.", f"UNIQUE-{name} " + "x" * 6_500)
    chat = new_chat(store, anthropic_provider(anth), searcher)
    for name in ("big-a", "big-b", "big-c"):
        anth.script.add(tool_call("activateSkill", {"name": name}))
        anth.script.add(text(f"Using {name}."))
        send(chat, f"activate {name}")
    filler_turns(chat, anth, 0, 4)
    assert "summary" not in chat.metadata
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 100)  # the 3 activations are summarised
    anth.script.add(text("## Decisions\n- none"))
    anth.script.add(text("after summary"))
    send(chat, "next")
    assert chat.metadata["summary"] == "## Decisions\n- none"
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 24_000)  # no second summary from here
    block = anth.last.body["messages"][0]["content"][1]["text"]
    assert block.startswith("[Active skills, re-attached after the summary")
    assert "UNIQUE-big-b" in block and "UNIQUE-big-c" in block and "UNIQUE-big-a" not in block
    assert ("[Not re-attached, to stay within 16,000 characters: big-a (the oldest activations); call "
            "activateSkill to load one again.]") in block
    assert len(block) <= skills.MAX_REATTACH_CHARS + 300
    assert chat.metadata["skills_reattached"] == ["big-b", "big-c"] and chat.metadata["skills_dropped"] == ["big-a"]
    body = json.dumps(anth.last.body)
    assert body.count("UNIQUE-big-b") == 1 and body.count("UNIQUE-big-a") == 0
    # the dropped skill can be loaded again (it is not "already active" any more); a kept one cannot
    anth.script.add(tool_call("activateSkill", {"name": "big-a"}), tool_call("activateSkill", {"name": "big-c"}))
    anth.script.add(text("ok"))
    send(chat, "reload big-a")
    results = [b for b in anth.last.body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert "UNIQUE-big-a" in results[0]["content"] and "already active" in results[1]["content"]
    assert chat.metadata["active_skills"] == ["big-b", "big-c", "big-a"]


def test_a_skill_activated_in_the_kept_turns_stays_verbatim(store, searcher, anth, monkeypatch):
    write_skill("old-one", "Old.", "OLD-SKILL-TEXT step.")
    write_skill("new-one", "New.", "NEW-SKILL-TEXT step.")
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(tool_call("activateSkill", {"name": "old-one"}))
    anth.script.add(text("ok"))
    send(chat, "use old-one")
    filler_turns(chat, anth, 0, 3)
    anth.script.add(tool_call("activateSkill", {"name": "New-One "}))  # names are matched lower-cased, trimmed
    anth.script.add(text("ok"))
    send(chat, "use new-one")
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 100)
    anth.script.add(text("## Decisions\n- none"))
    anth.script.add(text("done"))
    send(chat, "next")
    assert chat.metadata["summary"] and chat.metadata["active_skills"] == ["old-one", "new-one"]
    assert chat.metadata["skills_reattached"] == ["old-one"]
    messages = anth.last.body["messages"]
    assert "OLD-SKILL-TEXT" in messages[0]["content"][1]["text"]
    assert "NEW-SKILL-TEXT" not in messages[0]["content"][1]["text"]
    body = json.dumps(anth.last.body)
    assert body.count("OLD-SKILL-TEXT") == 1 and body.count("NEW-SKILL-TEXT") == 1  # new-one: its tool result


def test_activate_skill_with_the_openai_provider(store, searcher, oai):
    chat = new_chat(store, openai_provider(oai), searcher)
    oai.script.add(tool_call("activateSkill", {"name": "summarise-source"}))
    oai.script.add(text("Summarising."))
    send(chat, "Summarise this article")
    body = oai.last.body
    assert "## Skills (call activateSkill to load one)" in body["messages"][0]["content"]
    assert [t["function"]["name"] for t in body["tools"]][-2:] == ["activateSkill", "captureUrl"]
    tool_message = [m for m in body["messages"] if m["role"] == "tool"][0]
    assert tool_message["content"] == skills.activation_text(skills.load().get("summarise-source"))
    assert chat.metadata["active_skills"] == ["summarise-source"]


def test_cairn_context_shows_the_skills_block(capsys):
    from tui.cli.main import main

    write_skill("daily-log", "Write today's log.")
    assert main(["context", "hello", "--provider", "anthropic", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    names = [b["name"] for b in result["blocks"]]
    assert names[:3] == ["tools", "system", "skills"]
    skills_block = result["blocks"][2]
    assert skills_block["cached"] is True and skills_block["tokens_est"] < 400  # small: names + descriptions
    assert result["body"]["system"][1]["text"].startswith(skills.CATALOG_HEADING)
    assert "- daily-log — Write today's log." in result["body"]["system"][1]["text"]
    assert main(["context", "hello", "--agent", "worker", "--json"]) == 0
    assert "skills" not in [b["name"] for b in json.loads(capsys.readouterr().out)["blocks"]]
    assert main(["context", "hello"]) == 0
    assert "     skills cached" in capsys.readouterr().out


def test_reattach_block_bounds():
    block, kept, dropped = skills.reattach_block([("a", "A" * 9_000), ("b", "B" * 6_000), ("c", "C" * 5_000)])
    assert kept == ["b", "c"] and dropped == ["a"]
    assert "A" * 10 not in block and "B" * 6_000 in block and "C" * 5_000 in block
    assert skills.reattach_block([]) == ("", [], [])
    block, kept, dropped = skills.reattach_block([("a", "short")])
    assert kept == ["a"] and dropped == [] and "Not re-attached" not in block


# ------------------------------------------------------------------------------------------------
# cairn skills


def cli(capsys, *argv) -> tuple[int, str, str]:
    from tui.cli.main import main

    code = main(["skills", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def editor(tmp_path, monkeypatch):
    """$EDITOR: a script that applies a Python str.replace to the file (old and new from env vars)."""
    script = tmp_path / "editor.py"
    script.write_text("import os, sys\n"
                      "p = sys.argv[1]\n"
                      "t = open(p, encoding='utf-8').read()\n"
                      "t = t.replace(os.environ['EDIT_OLD'], os.environ['EDIT_NEW'])\n"
                      "open(p, 'w', encoding='utf-8').write(t)\n", encoding="utf-8")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")

    def set_edit(old: str, new: str) -> None:
        monkeypatch.setenv("EDIT_OLD", old)
        monkeypatch.setenv("EDIT_NEW", new)

    return set_edit


def test_cli_lists_skills_with_origin_and_path(capsys):
    write_skill("weekly-review", "My own review.")
    (user_dir() / "broken.md").write_bytes(b"\xff\xfe")
    code, out, err = cli(capsys)
    assert code == 0
    assert f"skills folder: {skills.user_dir()}" in out
    assert "integrate  Connect a node into the graph" in out
    assert f"shipped · {skills.BUILTIN_DIR / 'integrate.md'}" in out
    assert "weekly-review  My own review." in out and f"user (overrides shipped) · {user_dir() / 'weekly-review.md'}" in out
    assert f"cairn: warning: skipped {user_dir() / 'broken.md'}: not valid UTF-8" in err
    code, out, _ = cli(capsys, "--json")
    listed = json.loads(out)
    assert [s["name"] for s in listed] == SHIPPED
    review = listed[2]
    assert review == {"name": "weekly-review", "description": "My own review.", "origin": "user",
                      "overrides_shipped": True, "path": str(user_dir() / "weekly-review.md"), "chars": len("Do the thing.")}


def test_cli_shows_a_skill(capsys):
    code, out, _ = cli(capsys, "show", "integrate")
    assert code == 0 and out.startswith("integrate  Connect a node into the graph")
    assert skills.load().get("integrate").instructions in out
    code, out, _ = cli(capsys, "show", "weekly-review", "--json")
    data = json.loads(out)
    assert data["origin"] == "shipped" and data["instructions"].startswith("Help the user review their past week")
    code, out, err = cli(capsys, "show", "nope")
    assert code == 1 and out == ""
    assert err == "cairn: There is no skill 'nope'; the skills are: integrate, summarise-source, weekly-review.\n"
    code, _, err = cli(capsys, "show")
    assert code == 2 and err == "cairn: Usage: cairn skills show NAME.\n"  # a usage error, as argparse's


def test_cli_new_writes_a_valid_template_and_refuses_to_overwrite(capsys):
    code, out, _ = cli(capsys, "new", "daily-log", "--no-edit", "--description", "Write  today's\nlog.")
    path = skills.user_dir() / "daily-log.md"
    assert code == 0 and out == f"Created the skill daily-log: {path} (edit it to write the instructions)\n"
    skill = skills.read_file(path)
    assert skill.description == "Write today's log." and skill.instructions.startswith("Write the instructions here")
    before = path.read_bytes()
    code, _, err = cli(capsys, "new", "daily-log", "--no-edit")
    assert code == 1 and "The skill daily-log already exists" in err and path.read_bytes() == before
    code, _, err = cli(capsys, "new", "integrate", "--no-edit")
    assert code == 1 and "Cairn ships a skill named integrate; to change it run: cairn skills edit integrate" in err
    assert not (skills.user_dir() / "integrate.md").exists()
    for bad in ("Daily", "daily log", "../x"):
        code, _, err = cli(capsys, "new", bad, "--no-edit")
        assert code == 1 and "is not a valid skill name: use lowercase letters, digits and hyphens" in err
    code, _, err = cli(capsys, "new", "empty-description", "--no-edit", "--description", "  ")
    assert code == 1 and "--description is empty" in err
    assert sorted(p.name for p in skills.user_dir().iterdir()) == ["daily-log.md"]


def test_cli_new_opens_the_editor_at_a_terminal(capsys, editor, monkeypatch):
    class TTY:
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", TTY())
    editor("Write the instructions here", "Summarise today's notes. Write the instructions here")
    code, out, _ = cli(capsys, "new", "daily-log")
    assert code == 0 and out == f"Created the skill daily-log: {skills.user_dir() / 'daily-log.md'}\n"
    assert skills.load().get("daily-log").instructions.startswith("Summarise today's notes.")
    # --no-edit at a terminal: the template only
    code, _, _ = cli(capsys, "new", "other", "--no-edit")
    assert skills.load().get("other").instructions.startswith("Write the instructions here")
    # an edit that breaks the skill: the template stays, the edit is kept beside it
    editor("name: broken-edit\n", "name: Broken Edit\n")
    code, _, err = cli(capsys, "new", "broken-edit")
    path = skills.user_dir() / "broken-edit.md"
    assert code == 1 and "'Broken Edit' is not a valid skill name" in err
    assert f"kept in {path}.rejected" in err and f"The skill file {path} holds the template." in err
    assert skills.load().get("broken-edit").instructions.startswith("Write the instructions here")
    assert "name: Broken Edit" in Path(f"{path}.rejected").read_text(encoding="utf-8")


def test_cli_new_without_a_terminal_writes_the_template_only(capsys, editor):
    editor("Write the instructions here", "EDITED")
    code, out, _ = cli(capsys, "new", "plain")  # pytest's stdin is not a terminal
    assert code == 0 and out.endswith("(edit it to write the instructions)\n")
    assert "EDITED" not in (skills.user_dir() / "plain.md").read_text(encoding="utf-8")


def test_cli_edit_copies_a_shipped_skill_to_the_user_folder(capsys, editor):
    shipped = skills.BUILTIN_DIR / "weekly-review.md"
    shipped_bytes = shipped.read_bytes()
    editor("Leave out type = 'memory' nodes", "Include type = 'memory' nodes")
    code, out, _ = cli(capsys, "edit", "weekly-review")
    copy = skills.user_dir() / "weekly-review.md"
    assert code == 0
    assert out == f"Saved the skill weekly-review: {copy} (your copy now overrides the shipped one)\n"
    assert shipped.read_bytes() == shipped_bytes
    skill = skills.load().get("weekly-review")
    assert skill.origin == "user" and skill.overrides and "Include type = 'memory' nodes" in skill.instructions
    # editing the user copy again changes it in place
    editor("Include type = 'memory' nodes", "Skip memory nodes")
    code, out, _ = cli(capsys, "edit", "weekly-review", "--json")
    data = json.loads(out)
    assert code == 0 and data["changed"] is True and data["path"] == str(copy) and data["overrides_shipped"] is True
    assert "Skip memory nodes" in copy.read_text(encoding="utf-8")


def test_cli_edit_without_a_change_copies_nothing(capsys, editor):
    editor("text that is not in the file", "anything")
    code, out, _ = cli(capsys, "edit", "integrate")
    assert code == 0 and out == "No change to the skill integrate.\n"
    assert not (skills.user_dir() / "integrate.md").exists()


def test_cli_an_invalid_edit_is_kept_aside_and_the_skill_is_unchanged(capsys, editor):
    path = write_skill("my-skill", "Mine.", "Step one.")
    before = path.read_bytes()
    editor("description: Mine.\n", "")  # removes the description
    code, _, err = cli(capsys, "edit", "my-skill")
    rejected = path.with_name("my-skill.md.rejected")
    assert code == 1
    assert "The edit is not a valid skill" in err and "has no description" in err and str(rejected) in err
    assert path.read_bytes() == before
    assert rejected.read_text(encoding="utf-8") == "---\nname: my-skill\n---\nStep one.\n"
    assert skills.load().warnings == []  # the .rejected file is not read as a skill


def test_cli_edit_fixes_a_broken_user_file(capsys, editor):
    path = user_dir() / "fix-me.md"
    path.write_text("---\nname: fix-me\n---\nSteps.\n", encoding="utf-8")
    editor("not in the file", "anything")
    code, out, err = cli(capsys, "edit", "fix-me", "--json")  # the editor changes nothing
    assert code == 0 and f"cairn: warning: skipped {path}: the frontmatter has no description" in err
    assert json.loads(out) == {"name": "fix-me", "path": str(path), "changed": False}
    editor("name: fix-me\n", "name: fix-me\ndescription: Fixed now.\n")
    code, out, err = cli(capsys, "edit", "fix-me")
    assert code == 0 and out == f"Saved the skill fix-me: {path}\n"
    assert skills.load().get("fix-me").description == "Fixed now." and skills.load().warnings == []
    path.write_bytes(b"---\nname: fix-me\n\xff")
    code, _, err = cli(capsys, "edit", "fix-me")
    assert code == 1 and f"{path} is not valid UTF-8 (byte 0xff" in err
    assert path.read_bytes() == b"---\nname: fix-me\n\xff"


def test_cli_edit_needs_an_editor(capsys, monkeypatch):
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    code, _, err = cli(capsys, "edit", "integrate")
    assert code == 1 and "Set $EDITOR (or $VISUAL) to edit a skill, or copy" in err
    code, _, err = cli(capsys, "edit", "nope")
    assert code == 1 and "There is no skill 'nope'" in err


# ------------------------------------------------------------------------------------------------
# the command palette


async def test_the_palette_lists_skills_and_starts_a_message_that_uses_one(store, db_path):
    from tui.app import CairnApp
    from tui.widgets.chat_pane import ChatInput

    write_skill("daily-log", "Write today's log.")
    (user_dir() / "broken.md").write_bytes(b"---\nname: broken\n---\nno description\n")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await app.right_panes()
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        listed = [t for t in commands if t.startswith("Skills: ")]
        assert listed == ["Skills: daily-log", "Skills: integrate", "Skills: summarise-source",
                          "Skills: weekly-review", "Skills: 1 skill file skipped"]
        assert commands["Skills: daily-log"].help == "Write today's log."
        editor = app.query_one(ChatInput)
        editor.load_text("the Alpha note")  # a draft is kept, after the skill's words
        await commands["Skills: integrate"].callback()
        await pilot.pause()
        assert editor.text == "Use the integrate skill: the Alpha note"
        assert app.focused is editor and editor.cursor_location == (0, len("Use the integrate skill: "))
        assert app.query_one("#right").current == "chat"
        await commands["Skills: integrate"].callback()  # not twice
        assert editor.text == "Use the integrate skill: the Alpha note"
        commands["Skills: 1 skill file skipped"].callback()
        await pilot.pause()
        notes = [n.message for n in app._notifications]
        assert any("broken.md" in m and "has no description" in m for m in notes)
        # a skill added while the app runs appears the next time the palette asks
        write_skill("later")
        assert "Skills: later" in {c.title for c in app.get_system_commands(app.screen)}
