"""Agents as configured (issue 14 item 5): each agent's model (easy on the provider's cheaper model,
`[agents]` in the config, a delegate on its own model), the tool scope the read tools keep to, and
`cairn context` naming the agent. The fake server records the model of every request."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from chat_support import (  # noqa: F401  (fixtures)
    SONNET,
    _no_proxies,
    anth,
    anthropic_provider,
    config,
    new_chat,
    oai,
    openai_provider,
    searcher,
    send,
)
from core import config as config_module
from core.agent import profiles
from core.agent.tools import ToolContext, ToolRunner
from core.chat import request as chat_request
from core.config import CHEAP_MODELS, AgentSettings, ConfigError
from core.providers import models
from fakes import text, tool_call

HAIKU = "claude-haiku-4-5"


def chat_model(store, chat_id: int) -> str:
    return store.db.execute("SELECT model FROM chats WHERE id = ?", (chat_id,)).fetchone()["model"]


def test_every_cheap_model_is_in_the_model_table():
    for provider, model in CHEAP_MODELS.items():
        if provider != "offline":
            assert models.lookup(model) is not None, model
    assert CHEAP_MODELS["anthropic"] == HAIKU


def test_easy_runs_on_the_cheap_model_and_the_orchestrator_on_the_configured_one(store, searcher, anth):
    anth.script.add(text("quick"), text("thorough"))
    easy = new_chat(store, anthropic_provider(anth), searcher, agent="easy")
    send(easy, "a quick one")
    orchestrator = new_chat(store, anthropic_provider(anth), searcher)
    send(orchestrator, "a long one")
    assert [r.body["model"] for r in anth.model_requests()] == [HAIKU, SONNET]
    assert easy.provider.model == HAIKU and chat_model(store, easy.id) == HAIKU  # the row records it
    assert chat_model(store, orchestrator.id) == SONNET
    # a reopened easy chat stays on its model
    anth.script.add(text("again"))
    send(new_chat(store, anthropic_provider(anth), searcher, chat_id=easy.id), "more")
    assert anth.last.body["model"] == HAIKU


def test_easy_on_openai_runs_on_the_cheaper_sibling(store, searcher, oai):
    oai.script.add(text("quick"))
    send(new_chat(store, openai_provider(oai, compatible=False), searcher, agent="easy"), "a quick one")
    assert oai.last.body["model"] == "gpt-4.1-nano"


def test_easy_on_a_compatible_server_stays_on_the_served_model(store, searcher, oai):
    """Ollama or llama.cpp serve their own model names: OpenAI's cheaper sibling would be a 404 there."""
    oai.script.add(text("quick"))
    easy = new_chat(store, openai_provider(oai, model="qwen2.5:7b"), searcher, agent="easy")
    send(easy, "a quick one")
    assert oai.last.body["model"] == "qwen2.5:7b" and easy.provider.model == "qwen2.5:7b"


def test_a_configured_chat_model_keeps_easy_on_it(store, searcher, anth):
    """chat.model set (e.g. a local server's only model): easy does not switch to a model it may not have."""
    anth.script.add(text("quick"))
    send(new_chat(store, anthropic_provider(anth), searcher, agent="easy", cfg=config(model=SONNET)), "hi")
    assert anth.last.body["model"] == SONNET


def test_the_config_sets_an_agents_model(tmp_path, store, searcher, anth):
    path = tmp_path / "config.toml"
    path.write_text('[agents]\neasy = "claude-opus-4-7"\norchestrator = "claude-opus-4-6"\n', encoding="utf-8")
    path.chmod(0o600)
    cfg = config_module.load(path)
    assert (cfg.agents.easy, cfg.agents.orchestrator, cfg.agents.worker) == ("claude-opus-4-7", "claude-opus-4-6", "")
    origins = {o.key: o for o in config_module.origins(path)}
    assert origins["agents.easy"].value == "claude-opus-4-7" and origins["agents.easy"].origin == "file"
    assert origins["agents.worker"].origin == "default"
    anth.script.add(text("a"), text("b"))
    send(new_chat(store, anthropic_provider(anth), searcher, agent="easy", cfg=cfg), "one")
    send(new_chat(store, anthropic_provider(anth), searcher, cfg=cfg), "two")
    assert [r.body["model"] for r in anth.model_requests()] == ["claude-opus-4-7", "claude-opus-4-6"]


def test_the_config_refuses_an_unknown_agent_with_the_nearest_one(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[agents]\neasey = "claude-haiku-4-5"\n', encoding="utf-8")
    path.chmod(0o600)
    with pytest.raises(ConfigError) as exc:
        config_module.load(path)
    assert str(exc.value) == f"{path}: unknown setting `agents.easey`; did you mean `easy`?"


def test_the_agents_table_names_every_built_in_agent_and_is_in_the_template():
    assert list(vars(AgentSettings())) == list(profiles.BUILT_IN)
    template = config_module.template()
    assert "[agents]" in template
    for name in profiles.BUILT_IN:
        assert any(line.startswith(f'{name} = ""') and "#" in line for line in template.splitlines())


def test_a_delegate_runs_on_its_own_model(store, searcher, anth):
    """orchestrator (Sonnet) → worker configured on Haiku → back on Sonnet; and the easy agent's
    delegate runs on the worker's model, not on easy's cheaper one."""
    cfg = config()
    cfg.agents.worker = HAIKU
    anth.script.add(tool_call("delegate", {"agent": "worker", "task": "find it"}), text("found"), text("done"))
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    send(chat, "go")
    assert [r.body["model"] for r in anth.model_requests()] == [SONNET, HAIKU, SONNET]
    sub = store.db.execute("SELECT model FROM chats WHERE json_extract(metadata, '$.parent_chat_id') = ?",
                           (chat.id,)).fetchone()
    assert sub["model"] == HAIKU
    assert chat.provider.model == SONNET  # the caller's provider is untouched

    anth.script.add(tool_call("delegate", {"agent": "planner", "task": "plan it"}), text("plan"), text("ok"))
    send(new_chat(store, anthropic_provider(anth), searcher, agent="easy"), "quick plan")
    assert [r.body["model"] for r in anth.model_requests()[3:]] == [HAIKU, SONNET, HAIKU]


@pytest.fixture
def scoped_graph(store, indexer):
    work = store.add_node("Quarterly budget", "The quarterly budget for the river project is 4200. " * 4,
                          dimensions=["work"])
    home = store.add_node("Home budget", "The home budget for the river holiday is 900. " * 4, dimensions=["home"])
    indexer.run()
    return work["id"], home["id"]


def test_tool_scope_filters_search_results(store, searcher, scoped_graph):
    work, home = scoped_graph
    open_runner = ToolRunner(ToolContext(store, searcher), profiles.READ_TOOLS)
    assert {h["node_id"] for h in open_runner.run("searchContent", {"query": "budget river"})} == {work, home}
    ctx = ToolContext(store, searcher, tool_scope=("Work",))
    runner = ToolRunner(ctx, profiles.READ_TOOLS)
    assert {h["node_id"] for h in runner.run("searchContent", {"query": "budget river"})} == {work}
    assert [n["id"] for n in runner.run("getNodesById", {"ids": [work, home]})["nodes"]] == [work]
    assert {n["id"] for n in runner.run("queryNodes", {"filter": "budget"})} == {work}
    assert ctx.touched == {work} and ctx.read == {work}
    with pytest.raises(Exception, match="sqliteQuery is off for this agent"):
        runner.run("sqliteQuery", {"sql": "SELECT title FROM nodes"})


def test_a_chat_agents_tool_scope_reaches_its_tools_not_its_retrieval(store, searcher, anth, scoped_graph,
                                                                      monkeypatch):
    work, home = scoped_graph
    scoped = profiles.with_overrides(profiles.BUILT_IN["orchestrator"], tool_scope=("work",))
    monkeypatch.setitem(profiles.BUILT_IN, "orchestrator", scoped)
    anth.script.add(tool_call("searchContent", {"query": "budget river"}), text("done"))
    send(new_chat(store, anthropic_provider(anth), searcher), "What are the budgets?")
    result = [b for b in anth.last.body["messages"][-1]["content"] if b.get("type") == "tool_result"][0]
    assert [h["node_id"] for h in json.loads(result["content"])] == [work]
    # read_scope is empty: automatic retrieval still offered the home note in the message's suffix
    assert "Home budget" in json.dumps(anth.model_requests()[0].body["messages"])


@pytest.fixture
def cli(cairn_cmd, cli_env):
    env = dict(cli_env)
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "FORCE_COLOR",
                "COLUMNS"):
        env.pop(var, None)
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    Path(env["CAIRN_HOME"]).mkdir(parents=True, exist_ok=True)
    return cairn_cmd, env


def run(cmd, env, *args):
    proc = subprocess.run([*cmd, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def test_cairn_context_shows_the_agent(cli):
    cmd, env = cli
    rc, out, err = run(cmd, env, "context", "hello", "--provider", "anthropic", "--agent", "easy", "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["agent"] == {"name": "easy", "model": HAIKU, "read_scope": [], "tool_scope": [], "model_note": ""}
    assert result["model"] == HAIKU and result["body"]["model"] == HAIKU
    rc, out, err = run(cmd, env, "context", "hello", "--provider", "anthropic", "--agent", "easy",
                       "--model", "claude-opus-4-7")
    assert rc == 0, err
    assert "agent easy on claude-opus-4-7 · retrieval reads all · tools reach all" in out
    rc, out, err = run(cmd, env, "context", "hello", "--provider", "anthropic", "--json")
    assert json.loads(out)["agent"]["name"] == "orchestrator" and json.loads(out)["agent"]["model"] == SONNET


def test_the_config_sets_each_agents_two_scopes_apart(store, searcher, anth, scoped_graph):
    """[tool_scope] reaches the read tools only, [read_scope] the automatic retrieval only."""
    work, home = scoped_graph
    cfg = config()
    cfg.tool_scope.orchestrator = ["work"]
    anth.script.add(tool_call("searchContent", {"query": "budget river"}), text("done"))
    send(new_chat(store, anthropic_provider(anth), searcher, cfg=cfg), "What are the budgets?")
    result = [b for b in anth.last.body["messages"][-1]["content"] if b.get("type") == "tool_result"][0]
    assert [h["node_id"] for h in json.loads(result["content"])] == [work]
    assert "Home budget" in json.dumps(anth.model_requests()[0].body["messages"])  # retrieval is not scoped

    cfg = config()
    cfg.read_scope.orchestrator = ["work"]
    anth.script.add(tool_call("searchContent", {"query": "budget river"}), text("done"))
    send(new_chat(store, anthropic_provider(anth), searcher, cfg=cfg), "What are the budgets?")
    first = json.dumps(anth.model_requests()[2].body["messages"])
    assert "Quarterly budget" in first and "Home budget" not in first  # retrieval keeps to work
    result = [b for b in anth.last.body["messages"][-1]["content"] if b.get("type") == "tool_result"][0]
    assert {h["node_id"] for h in json.loads(result["content"])} == {work, home}  # the tools are not scoped


def test_a_scope_in_the_file_reaches_the_agent_and_a_typo_is_refused(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[tool_scope]\nworker = ["work", " ", "work"]\n[read_scope]\nplanner = ["home"]\n',
                    encoding="utf-8")
    path.chmod(0o600)
    cfg = config_module.load(path)
    assert profiles.get("worker", cfg).tool_scope == ("work",) and profiles.get("worker", cfg).read_scope == ()
    assert profiles.get("planner", cfg).read_scope == ("home",)
    assert profiles.get("worker").tool_scope == ()  # without a config: the profile as built in
    path.write_text('[tool_scope]\nwokrer = ["work"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown setting `tool_scope.wokrer`; did you mean `worker`\?"):
        config_module.load(path)
    path.write_text('[read_scope]\nworker = "work"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"`read_scope.worker` must be a list"):
        config_module.load(path)


def test_an_agents_model_of_another_provider_is_not_sent_and_the_preview_says_why(store, searcher, oai):
    """agents.easy names a Claude model while the chat runs on OpenAI: OpenAI would refuse the model,
    so the agent runs on OpenAI's own cheaper model and the viewer / `cairn context` say so."""
    from core.chat.preview import next_request

    cfg = config(provider="openai")
    cfg.agents.easy = HAIKU
    assert chat_request.model_for(profiles.get("easy"), cfg, "openai") == "gpt-4.1-nano"
    note = chat_request.model_note(profiles.get("easy"), cfg, "openai")
    assert note == "agents.easy = 'claude-haiku-4-5' is a model of anthropic, not of openai: not used"
    cfg.chat.agent = "easy"
    preview = next_request(store, cfg, openai_provider(oai, compatible=False), "hi", searcher=searcher)
    assert preview.provider.model == "gpt-4.1-nano" and note in preview.agent_line
    assert preview.agent_facts["model_note"] == note
    cfg.agents.easy = "qwen3:8b"  # a model the table does not know (a local one): the user's to name
    assert chat_request.model_for(profiles.get("easy"), cfg, "openai") == "qwen3:8b"
    assert chat_request.model_note(profiles.get("easy"), cfg, "openai") == ""
