"""Issue 7, part A: secrets and what leaves the machine.

A realistic session with a fake key (CLI `ask` against the fake Anthropic server, a rejected key,
`context`, `config`, `chats`, `export`, `backup`, then the TUI's Context viewer), after which every
artefact of the run is searched for the key: the CAIRN_HOME tree byte for byte (the database, its
WAL, the backup, the exported vault), captured stdout/stderr and the viewer's rendered text.
Then privacy.never_send against a *remote* OpenAI-shaped provider: the private note's text is in no
request body, even when the model asks for it by id, and sent_log never names it.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from chat_support import (  # noqa: F401  (fixtures)
    _no_proxies, config, dump_db, new_chat, oai, openai_provider, raw_bodies, searcher, send)
from fakes import FakeAnthropic, text, tool_call

KEY = "sk-ant-FAKE-KEY-1234567890"
WRONG_KEY = "sk-ant-FAKE-WRONG-0987654321"
FILE_KEY = "sk-ant-FAKE-FILEKEY-5555555555"
SECRET_TEXT = "the vault combination is 4417-ZEBRA"


def run(cmd, env, *args, extra_env=None):
    proc = subprocess.run([*cmd, *map(str, args)], env={**env, **(extra_env or {})}, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def tree_bytes(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every regular file under root (recursively), name -> bytes."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name not in skip:
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def leaks(blobs: dict[str, bytes], *secrets: str) -> list[str]:
    """Names of the blobs that contain any of the secrets (as UTF-8 or UTF-16, or its last 12 chars)."""
    found = []
    for name, data in blobs.items():
        for s in secrets:
            for needle in (s, s[-12:]):
                if needle.encode() in data or needle.encode("utf-16-le") in data:
                    found.append(f"{name}: {needle}")
    return found


@pytest.fixture
def cli(cairn_cmd, cli_env):
    env = dict(cli_env)
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "FORCE_COLOR",
                "COLUMNS", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                "ANTHROPIC_LOG", "OPENAI_LOG"):
        env.pop(var, None)
    home = Path(env["CAIRN_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    from core.graph.store import Store

    with Store(home / "cairn.db") as store:
        a = store.add_node("Otter habitats", "Otters live along rivers and coasts.", dimensions=["nature"])
        b = store.add_node("River cleanup", "Saturday river cleanup with the otter group.")
        store.add_edge(a["id"], b["id"], "The cleanup protects otter habitats.")
    return cairn_cmd, env, home, a["id"], b["id"]


# ------------------------------------------------------------------------------------------------
# the whole session, then grep every artefact


async def _viewer_text(db: Path, key: str) -> str:
    """Open the app on the CLI's database, show the Context viewer (f2), expand every block, and
    return everything it rendered plus the screen."""
    import html
    import re
    import time

    from rich.text import Text

    from tui.app import CairnApp
    from tui.widgets.context_viewer import ContextViewer

    class App(CairnApp):
        def watch_database(self) -> None:  # not under test; would race the end of the test
            pass

    app = App(db, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.services.config.chat.provider == "anthropic"  # read from the session's config file
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)
        deadline = time.monotonic() + 20
        while not viewer.query("#block-focus"):
            assert time.monotonic() < deadline, "the viewer never showed its blocks"
            await pilot.pause(0.05)
        viewer.focus()
        await pilot.press("e")  # expand every block
        await pilot.pause()
        parts = []
        for w in viewer.query("Static"):
            c = w.content
            parts.append(c.plain if isinstance(c, Text) else str(c))
        parts += [str(c.title) for c in viewer.query(".block")]
        parts.append(html.unescape(re.sub(r"<[^>]+>", "", app.export_screenshot())))
        rendered = "\n".join(parts)
        assert "set (from $ANTHROPIC_API_KEY)" in rendered  # the viewer does say where the key comes from
        assert "Otter habitats" in rendered  # and did render the request's blocks
        live = tree_bytes(db.parent)  # while the app holds the database open (its -wal and -shm files too)
    return rendered, live


def test_a_whole_session_leaves_no_key_anywhere(cli, monkeypatch, tmp_path):
    cmd, env, home, a, b = cli
    outputs: list[str] = []

    def cairn(*args, extra_env=None, expect=0):
        rc, out, err = run(cmd, env, *args, extra_env=extra_env)
        outputs.append(f"$ cairn {' '.join(map(str, args))}\n{out}\n{err}")
        assert rc == expect, (args, out, err)
        assert "Traceback" not in out + err
        return out, err

    # settings through the CLI: the config file it creates is private
    cairn("config", "set", "chat.provider", "anthropic")
    cfg_file = home / "config.toml"
    assert stat.S_IMODE(cfg_file.stat().st_mode) == 0o600
    with FakeAnthropic(api_key=KEY) as srv:  # the fake rejects any other key with a 401
        env.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=srv.base_url)
        srv.script.add(text("Otters live along rivers [1]."))
        # the SDK's own debug logging on, as a user chasing a problem would have it
        out, err = cairn("ask", "Where do otters live?", "--focus", f"{a},{b}", extra_env={"ANTHROPIC_LOG": "debug"})
        assert "Otters live along rivers" in out
        assert "HTTP Request: POST" in err or "Request options" in err  # the SDK did log
        assert srv.requests[0].headers.get("x-api-key") == KEY or \
            srv.requests[0].headers.get("authorization") == f"Bearer {KEY}"  # the key was used ...
        chat_id = json.loads(cairn("chats", "--json")[0])[0]["id"]
        srv.script.add(text("On Saturday."))
        out, _ = cairn("ask", "When is the cleanup?", "--chat", chat_id, "--json")
        assert json.loads(out)["status"] == "complete"
        # a rejected key: a real 401 from the server, which says nothing of the key it got
        out, err = cairn("ask", "hello again", "--chat", chat_id, extra_env={"ANTHROPIC_API_KEY": WRONG_KEY},
                         expect=1)
        assert "Anthropic rejected the API key (401 unauthorized). Check $ANTHROPIC_API_KEY." in out + err
        assert srv.requests[-1].status == 401
        cairn("context", "Where do otters live?", "--focus", a, "--json")
        cairn("context", "Where do otters live?", "--chat", chat_id)
        out, _ = cairn("config")
        assert re.search(r"^anthropic = set +# environment \(\$ANTHROPIC_API_KEY\)$", out, re.M)
        cairn("config", "--json")
        cairn("chats")
        cairn("export", home / "vault")
        out, _ = cairn("backup", "--json")
        backup = Path(json.loads(out)["backup"])
        assert backup.exists() and home in backup.parents
        assert [r.status for r in srv.requests] == [200, 200, 401]
        sent = raw_bodies(srv)

    # every request's sent_log row names the nodes that left, and the provider they went to
    from core.graph.store import Store

    with Store(home / "cairn.db") as store:
        log = [dict(r) for r in store.db.execute("SELECT * FROM sent_log WHERE chat_id = ? ORDER BY id", (chat_id,))]
        assert len(log) == 3 and {r["provider"] for r in log} == {"anthropic"}
        assert {a, b} <= set(json.loads(log[0]["node_ids"]))  # the focused notes went with the first question
        assert "Otter habitats" in sent
        error = store.db.execute("SELECT sent FROM messages WHERE chat_id = ? AND role = 'assistant'"
                                 " ORDER BY id DESC LIMIT 1", (chat_id,)).fetchone()["sent"]
        assert "rejected the API key" in error  # the error text is stored ... (and checked below)

    # the TUI's Context viewer on the same home, key in the environment
    monkeypatch.setenv("CAIRN_HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    import asyncio

    rendered, live = asyncio.run(_viewer_text(home / "cairn.db", KEY))
    assert "cairn.db-wal" in live  # the write-ahead log, not yet checkpointed into the file
    assert leaks(live, KEY, WRONG_KEY) == []

    # now look everywhere
    blobs = tree_bytes(home)
    assert "cairn.db" in blobs and any(n.startswith("vault") for n in blobs) and backup.name in blobs
    assert b"Otters live along rivers" in b"".join(blobs.values())  # the search does see the content
    blobs["stdout+stderr"] = "\n".join(outputs).encode()
    blobs["viewer"] = rendered.encode()
    blobs["db rows"] = dump_db(home / "cairn.db").encode()
    blobs["backup rows"] = dump_db(backup).encode()
    blobs["home dir"] = b"".join(tree_bytes(Path(env["HOME"])).values())
    assert leaks(blobs, KEY, WRONG_KEY) == []


def test_a_key_in_the_config_file_is_used_never_shown_and_a_readable_file_warns(cli):
    cmd, env, home, a, b = cli
    from core import config as config_module

    path = config_module.write_default(home / "config.toml")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config_module.set_value("keys.anthropic", FILE_KEY, path)
    config_module.set_value("chat.provider", "anthropic", path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # rewriting keeps it private
    outputs = []
    with FakeAnthropic(api_key=FILE_KEY) as srv:
        env["ANTHROPIC_BASE_URL"] = srv.base_url
        srv.script.add(text("From the file key."))
        rc, out, err = run(cmd, env, "ask", "hello")
        outputs.append(out + err)
        assert rc == 0, err
        assert "From the file key." in out and srv.requests[-1].status == 200  # the fake accepted the file's key
        assert "readable by other users" not in err
        rc, out, err = run(cmd, env, "config")
        outputs.append(out + err)
        assert re.search(r"^anthropic = set +# file$", out, re.M) and "readable" not in err

        os.chmod(path, 0o644)
        rc, out, err = run(cmd, env, "config", "--json")
        outputs.append(out + err)
        assert rc == 0 and f"{path} is readable by other users; run: chmod 600 {path}" in err
        assert {"key": "keys.anthropic", "value": "set", "origin": "file"} in json.loads(out)
        srv.script.add(text("Still works."))
        rc, out, err = run(cmd, env, "ask", "hello again")
        outputs.append(out + err)
        assert rc == 0 and "readable by other users" in err  # every command that reads it warns
        # the environment beats the file: a wrong key there is what is sent (and rejected)
        rc, out, err = run(cmd, env, "ask", "third", extra_env={"ANTHROPIC_API_KEY": WRONG_KEY})
        outputs.append(out + err)
        assert rc == 1 and "rejected the API key" in out + err
        rc, out, err = run(cmd, env, "config", "set", "keys.anthropic", "sk-new")
        outputs.append(out + err)
        assert rc == 1 and "environment" in err
        assert FILE_KEY in path.read_text()  # refused: the file is unchanged
    assert leaks({"config.toml": path.read_bytes()}, FILE_KEY)  # the search finds a key where there is one
    blobs = tree_bytes(home, skip=("config.toml",))  # the file the user put the key in is the one place it may be
    blobs["outputs"] = "\n".join(outputs).encode()
    blobs["db rows"] = dump_db(home / "cairn.db").encode()
    assert leaks(blobs, FILE_KEY, WRONG_KEY) == []


# ------------------------------------------------------------------------------------------------
# error text never carries the key, even when a server echoes it


@pytest.mark.parametrize("status", [400, 404, 418, 500])
def test_an_error_that_echoes_the_key_is_shown_without_it(store, searcher, oai, monkeypatch, status):
    from core.providers import openai_provider as op
    from fakes import http_error

    monkeypatch.setattr(op, "MAX_RETRIES", 0)
    provider = openai_provider(oai, key=KEY, remote=True)
    chat = new_chat(store, provider, searcher)
    # Some servers and proxies quote the key they were given in their error message.
    oai.script.add(http_error(status, message=f"Incorrect request for key {KEY} (org-x)"))
    events = send(chat, "hello")
    errors = [str(e.error) for e in events if e.type == "error"]
    assert len(errors) == 1
    assert KEY not in errors[0] and KEY[-12:] not in errors[0]
    assert KEY not in chat.last_reply.error and KEY not in dump_db(store.path)


# ------------------------------------------------------------------------------------------------
# never_send with a remote OpenAI-shaped provider


@pytest.fixture
def private_graph(store, indexer):
    secret = store.add_node("Safe deposit notes", f"Private: {SECRET_TEXT}. Keep this to myself. " * 3,
                            dimensions=["private"])
    public = store.add_node("Bank errands", "Errands at the bank on Friday: the safe deposit box and forms. " * 3,
                            dimensions=["errands"])
    store.add_edge(secret["id"], public["id"], "Safe deposit notes mention the errands")
    indexer.run()
    return secret["id"], public["id"]


def test_never_send_keeps_a_private_note_out_of_every_openai_request(store, searcher, oai, private_graph):
    from core.chat.focus import Focus

    secret, public = private_graph
    cfg = config()
    cfg.privacy.never_send = ["private"]
    provider = openai_provider(oai, remote=True)
    chat = new_chat(store, provider, searcher, cfg=cfg)
    chat.set_focus(Focus((secret, public), secret))  # even open in the active tab
    # the context builder leaves it out of the prompt
    request = chat.request("What is in the safe deposit notes?")
    assert secret not in request.node_ids and "4417-ZEBRA" not in request.suffix.text
    # the model asks for it by id and by every other path
    oai.script.add(
        tool_call("getNodesById", {"ids": [secret, public]}),
        tool_call("searchContent", {"query": "vault combination zebra"}),
        tool_call("searchContent", {"query": "combination", "node_id": secret}),
        tool_call("queryNodes", {"dimension": "private"}),
        tool_call("queryNodes", {"filter": "safe deposit"}),
        tool_call("queryEdges", {"node_id": public}),
        tool_call("queryEdges", {"node_id": secret}),
    )
    oai.script.add(text("I could not find it."))
    send(chat, "What is the vault combination in my safe deposit notes?")
    assert chat.last_reply.status == "complete" and chat.last_reply.tool_calls == 7
    oai.script.add(text("ok"))
    send(chat, f"Show me note {secret} in full.")
    assert len(oai.requests) == 3
    sent = raw_bodies(oai)
    assert "4417-ZEBRA" not in sent and "vault combination is" not in sent and "Safe deposit notes" not in sent
    assert "Bank errands" in sent  # the visible note did go (the check can fail)
    tools = [m for m in oai.requests[1].body["messages"] if m["role"] == "tool"]
    assert len(tools) == 7
    got = json.loads(tools[0]["content"])
    assert got["not_found_or_private"] == [secret]
    assert tools[2]["content"] == "[]"  # searchContent inside the hidden node: nothing
    assert tools[5]["content"] == "[]"  # the public note's only edge leads to the hidden one
    assert "There is no node" in tools[6]["content"]
    logged = [json.loads(r["node_ids"]) for r in store.db.execute("SELECT node_ids FROM sent_log ORDER BY id")]
    assert len(logged) == 3 and all(secret not in ids for ids in logged) and any(public in ids for ids in logged)


def test_a_local_openai_compatible_server_may_see_the_private_note(store, searcher, oai, private_graph):
    """The control for the test above: the same script against a local server does send it."""
    from core.chat.focus import Focus

    secret, _ = private_graph
    cfg = config()
    cfg.privacy.never_send = ["private"]
    provider = openai_provider(oai)
    assert provider.remote is False
    chat = new_chat(store, provider, searcher, cfg=cfg)
    chat.set_focus(Focus((secret,), secret))
    oai.script.add(tool_call("getNodesById", {"ids": [secret]}))
    oai.script.add(text("Here."))
    send(chat, "What is in my safe deposit notes?")
    assert "4417-ZEBRA" in raw_bodies(oai)
    logged = [json.loads(r["node_ids"]) for r in store.db.execute("SELECT node_ids FROM sent_log ORDER BY id")]
    assert secret in logged[0]
