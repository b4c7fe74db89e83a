"""`cairn context`, `cairn ask` and `cairn chats` as real processes, against the fake Anthropic server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from chat_support import KEY, SONNET, _no_proxies, anth, dump_db  # noqa: F401  (fixtures)
from fakes import text, unauthorized


@pytest.fixture
def cli(cairn_cmd, cli_env, tmp_path):
    """(cmd, env, db path) with two notes and an edge; no API key and no proxy in the environment."""
    env = dict(cli_env)
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "FORCE_COLOR",
                "COLUMNS", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(var, None)
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    db = Path(env["CAIRN_HOME"]) / "cairn.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    from core.graph.store import Store

    with Store(db) as store:
        a = store.add_node("Otter habitats", "Otters live along rivers and coasts.", dimensions=["nature"])
        b = store.add_node("River cleanup", "Saturday river cleanup with the otter group.", link="https://example.org/r")
        store.add_edge(a["id"], b["id"], "The cleanup protects otter habitats.")
    return cairn_cmd, env, db, a["id"], b["id"]


def run(cmd, env, *args):
    proc = subprocess.run([*cmd, *map(str, args)], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=120)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def test_context_prints_body_and_blocks_without_a_key(cli):
    cmd, env, db, a, b = cli
    rc, out, err = run(cmd, env, "context", "Where do otters live?", "--focus", f"{a},{b}", "--primary", b,
                       "--provider", "anthropic", "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["provider"] == "anthropic" and result["model"] == SONNET
    names = [blk["name"] for blk in result["blocks"]]
    assert names[:2] == ["tools", "system"] and names[-1] == "datetime" and "user" in names
    # the volatile blocks close the request: focus, then (its notes wait to be indexed, so keyword
    # passages: core/search/retrieval_fallback.py) retrieved, then the date
    assert names[names.index("focus"):] in (["focus", "datetime"], ["focus", "retrieved", "datetime"])
    for blk in result["blocks"]:
        assert isinstance(blk["tokens_est"], int) and blk["tokens_est"] > 0
        assert blk["cached"] is (blk["name"] not in ("focus", "retrieved", "datetime"))
    assert result["tokens_est_total"] == sum(blk["tokens_est"] for blk in result["blocks"])
    body = result["body"]
    assert body["model"] == SONNET and body["tools"][0]["name"] == "queryNodes"
    user = body["messages"][-1]["content"]
    assert user[0] == {"type": "text", "text": "Where do otters live?", "cache_control": {"type": "ephemeral"}}
    focus = user[1]["text"]
    assert f'Primary (active tab): [NODE:{b}:"River cleanup"]' in focus
    assert f'Also open: [NODE:{a}:"Otter habitats"]' in focus
    assert set(result["node_ids"]) >= {a, b}
    # the same prefix whatever the active tab is
    rc, out2, err = run(cmd, env, "context", "Where do otters live?", "--focus", f"{a},{b}", "--primary", a,
                        "--provider", "anthropic", "--json")
    other = json.loads(out2)["body"]
    assert other["system"] == body["system"] and other["tools"] == body["tools"]
    assert other["messages"][-1]["content"][1] != user[1]


def test_ask_streams_the_reply_and_chats_lists_it(cli, anth):
    cmd, env, db, a, b = cli
    env = {**env, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anth.base_url}
    anth.script.add(text("Otters live along rivers [1] and coasts."))
    rc, out, err = run(cmd, env, "ask", "Where do otters live?", "--provider", "anthropic", "--focus", a)
    assert rc == 0, err
    assert "Otters live along rivers [1] and coasts." in out
    assert len(anth.requests) == 1 and anth.last.body["model"] == SONNET
    assert anth.last.headers["authorization"] == f"Bearer {KEY}"
    suffix = anth.last.body["messages"][-1]["content"][1]["text"]  # the focused node went with the question
    assert f'Primary (active tab): [NODE:{a}:"Otter habitats"]' in suffix
    rc, out, err = run(cmd, env, "chats", "--json")
    assert rc == 0, err
    chats = json.loads(out)
    assert len(chats) == 1
    chat = chats[0]
    assert chat["title"] == "Where do otters live?" and chat["provider"] == "anthropic" and chat["model"] == SONNET
    assert chat["replies"] == 1 and chat["usage"]["input"] == anth.last.usage["input_tokens"] + \
        anth.last.usage["cache_creation_input_tokens"] + anth.last.usage["cache_read_input_tokens"]
    # continue the chat, as JSON
    anth.script.add(text("On Saturday."))
    rc, out, err = run(cmd, env, "ask", "When is the cleanup?", "--chat", chat["id"], "--provider", "anthropic", "--json")
    assert rc == 0, err
    reply = json.loads(out)
    assert reply["chat_id"] == chat["id"] and reply["text"] == "On Saturday." and reply["status"] == "complete"
    assert [m["role"] for m in anth.last.body["messages"]] == ["user", "assistant", "user"]
    # the key never shows up in output or the database
    assert KEY not in out + err and KEY not in dump_db(db)


def test_ask_without_a_key_names_the_variable(cli):
    cmd, env, db, a, b = cli
    rc, out, err = run(cmd, env, "ask", "hello", "--provider", "anthropic")
    assert rc == 1
    assert err.startswith("cairn: ") and "ANTHROPIC_API_KEY" in err and "Traceback" not in err + out


def test_ask_reports_a_rejected_key_and_exits_1(cli, anth):
    cmd, env, db, a, b = cli
    env = {**env, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anth.base_url}
    anth.script.add(unauthorized())
    rc, out, err = run(cmd, env, "ask", "hello", "--provider", "anthropic")
    assert rc == 1
    assert "Anthropic rejected the API key (401 unauthorized). Check $ANTHROPIC_API_KEY." in out + err
    assert KEY not in out + err and "Traceback" not in out + err


def test_ctrl_c_keeps_the_partial_reply_marked_incomplete(cli, anth, ctrl_c_cairn_cmd):
    import signal
    import time

    from fakes import slow

    cmd, env, db, a, b = cli
    env = {**env, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anth.base_url}
    anth.script.add(slow(1.0), text("a reply that arrives late"))
    proc = subprocess.Popen([*ctrl_c_cairn_cmd, "ask", "tell me a story", "--provider", "anthropic"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not anth.requests:  # wait until the request is in flight (the server holds the first token)
            assert time.monotonic() < deadline and proc.poll() is None, "the request never arrived"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    out, err = out.decode(), err.decode()
    assert proc.returncode == 1, err
    assert "[incomplete reply" in out and "Traceback" not in out + err
    from core.graph.store import Store

    with Store(db) as store:
        row = store.db.execute("SELECT status FROM messages WHERE role = 'assistant' ORDER BY id DESC").fetchone()
    assert row["status"] == "incomplete"


class _CtrlCAtFirstWrite:
    """stdout whose first write of reply text is cut by a Ctrl-C: the moment the main thread prints a delta."""

    def __init__(self):
        self.text, self.cut = "", False

    def write(self, s: str) -> int:
        if s.strip() and not self.cut:
            self.cut = True
            raise KeyboardInterrupt
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def test_ctrl_c_while_a_delta_is_printed_still_keeps_the_partial_reply(cli, anth, monkeypatch):
    """A Ctrl-C lands where the main thread happens to be; printing a streamed delta is one such place
    (before: the KeyboardInterrupt left the loop, the command exited 130 and the reply ran on unstopped)."""
    from fakes import slow

    from tui.cli.main import main

    cmd, env, db, a, b = cli
    for name in ("CAIRN_HOME", "HOME"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anth.base_url)
    anth.script.add(slow(30.0, "mid_stream", after_deltas=1), text("Once upon a time an otter swam.", deltas=3))
    stdout = _CtrlCAtFirstWrite()
    monkeypatch.setattr("sys.stdout", stdout)
    assert main(["ask", "tell me a story", "--provider", "anthropic", "--db", str(db)]) == 1
    assert stdout.cut and "[incomplete reply" in stdout.text
    from core.graph.store import Store

    with Store(db) as store:
        row = store.db.execute("SELECT status, content FROM messages WHERE role = 'assistant' ORDER BY id DESC").fetchone()
    assert row["status"] == "incomplete" and json.loads(row["content"])[0]["text"].startswith("Once")


def test_context_names_the_models_cache_minimum_and_an_unknown_model(cli):
    """The minimum comes from the model table; a model it does not know is said to be assumed."""
    cmd, env, db, a, b = cli
    rc, out, err = run(cmd, env, "context", "Where do otters live?", "--provider", "anthropic", "--json")
    cache = json.loads(out)["cache"]
    assert rc == 0 and cache["min_cacheable_tokens"] == 2048 and cache["model_known"] and cache["assumed"] == ""
    rc, out, err = run(cmd, env, "context", "Where do otters live?", "--provider", "anthropic", "--model", "claude-next-9")
    assert rc == 0, err
    assert "caches prefixes from 4096 tokens" in out
    assert "unknown model: assumed a 128,000-token window" in out


def test_ask_and_chats_show_the_cost_in_money(cli, anth):
    """The reply's usage line ends with its price (claude-sonnet-4-6 from the model table, cache writes at
    the 5-minute price), `cairn chats` prices the chat's summed usage, and the offline chat has no price."""
    cmd, env, db, a, b = cli
    env = {**env, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anth.base_url}
    anth.script.add(text("Otters live along rivers [1] and coasts."))
    rc, out, err = run(cmd, env, "ask", "Where do otters live?", "--provider", "anthropic", "--focus", a)
    assert rc == 0, err
    u = anth.last.usage  # what the fake reported: input_tokens is the uncached part
    usd = (u["input_tokens"] * 3.00 + u["cache_creation_input_tokens"] * 3.75
           + u["cache_read_input_tokens"] * 0.30 + u["output_tokens"] * 15.00) / 1e6
    from core.chat.cost import usd as shown

    line = out.strip().splitlines()[-1]
    assert line.startswith("chat ") and line.endswith(f" · {shown(usd)}") and usd > 0
    rc, out, err = run(cmd, env, "ask", "Where do otters live?", "--provider", "anthropic", "--json",
                       "--chat", "1")
    assert rc == 0, err
    second = json.loads(out)["cost"]
    u2 = anth.last.usage
    usd2 = (u2["input_tokens"] * 3.00 + u2["cache_creation_input_tokens"] * 3.75
            + u2["cache_read_input_tokens"] * 0.30 + u2["output_tokens"] * 15.00) / 1e6
    assert abs(second["usd"] - usd2) < 1e-9 and second["label"] == shown(usd2)
    rc, out, err = run(cmd, env, "ask", "Where do otters live?", "--provider", "offline")
    assert rc == 0, err
    assert out.strip().splitlines()[-1].endswith(" · no price")
    rc, out, err = run(cmd, env, "chats", "--json")
    chats = {c["provider"]: c for c in json.loads(out)}
    assert abs(chats["anthropic"]["cost"]["usd"] - (usd + usd2)) < 1e-9
    assert chats["offline"]["cost"]["label"] == "no price"
    rc, out, err = run(cmd, env, "chats")
    assert rc == 0, err
    assert f"· {shown(usd + usd2)} ·" in out and "· no price ·" in out
