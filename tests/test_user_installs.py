"""Cairn installed as a user installs it, from the configured package index, then used from outside the
checkout: (1) the wheel into a fresh venv by that venv's own bundled pip, not upgraded (pip before 24
did not match jusText's `lxml[html_clean]` to lxml's `html-clean` extra, and `cairn add --url` failed);
(2) `pipx install .` from the checkout, the README's way for a command-line app, then every verb
`cairn --help` lists, `add --url` against a page served on loopback among them. Without the index the
tests skip, saying why; tests/test_packaging.py checks the wheel itself without the network."""

from __future__ import annotations

import ensurepip
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import pytest

from chat_support import KEY
from conftest import _SIGINT_AS_AT_A_TERMINAL
from fakes import FakeAnthropic, text
from test_mcp import TOOLS
from test_packaging import HEADLESS_APP, build_wheel, mcp_tool_names

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "tests" / "web_pages"
INSTALL_SECONDS = 900  # a cold pip cache downloads some 150 MB; no assertion is about speed
RUN_SECONDS = 120
# The environment installs run in: the user's own (pip's cache and configuration, any proxy), taken at
# import, before a test's fixtures point HOME elsewhere; nothing of this interpreter's venv.
INSTALL_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
# The versions `make test` pins (constraints.txt, read by pip and by the pip pipx runs): a new release
# upstream then arrives as a deliberate bump of that file, not as a red CI on unrelated work. What this
# test is about (the bundled pip, how it reads extras, an isolated tool install) is the same either way.
INSTALL_ENV["PIP_CONSTRAINT"] = str(ROOT / "constraints.txt")
PROXIES = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}


@dataclass
class Use:
    """Runs an installed `cairn` from a folder outside the checkout, with a home of its own."""

    cairn: Path
    python: Path  # the interpreter of the venv it is installed in
    work: Path
    env: dict[str, str]

    def run(self, *args: str, input: str | None = None, rc: int = 0) -> subprocess.CompletedProcess:
        done = subprocess.run([str(self.cairn), *map(str, args)], cwd=self.work, env=self.env, input=input,
                              stdin=None if input is not None else subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=RUN_SECONDS)
        assert done.returncode == rc, f"cairn {' '.join(map(str, args))} exited {done.returncode}\n" \
                                      f"{done.stdout}\n{done.stderr}"
        return done

    def json(self, *args: str):
        return json.loads(self.run(*args, "--json").stdout)


def _use(base: Path, cairn: Path, python: Path) -> Use:
    work = base / "work"
    work.mkdir(parents=True)
    env = {k: v for k, v in INSTALL_ENV.items() if k.lower() not in PROXIES}  # the page is on loopback
    env |= {"HOME": str(base / "home"), "CAIRN_HOME": str(base / "cairnhome"),
            "XDG_CACHE_HOME": str(base.parent / "cache")}  # one prepared embedder for the module's installs
    for name in ("CAIRN_DEBUG", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        env.pop(name, None)
    return Use(cairn=cairn, python=python, work=work, env=env)


def _install(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(list(args), cwd=cwd, env=env or INSTALL_ENV, capture_output=True, text=True,
                          timeout=INSTALL_SECONDS)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr}"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("user-installs")


@pytest.fixture(scope="module")
def built(base):
    return build_wheel(base / "build")


@pytest.fixture(scope="module")
def fresh_venv(base) -> Path:
    """A venv made by `python -m venv` with its bundled pip, after a look at the package index."""
    venv = base / "venv"
    _install(sys.executable, "-m", "venv", str(venv))
    probe = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "download", "--no-deps", "--dest",
                            str(base / "probe"), "lxml_html_clean"], env=INSTALL_ENV, capture_output=True, text=True,
                           timeout=INSTALL_SECONDS)
    if probe.returncode != 0:
        lines = [line for line in probe.stderr.splitlines() if line.strip()]
        pytest.skip(f"the package index is not reachable: {lines[-1] if lines else probe.returncode}")
    return venv


@pytest.fixture(scope="module")
def installed(base, built, fresh_venv) -> dict[str, Use]:
    """Both installs: the wheel by the fresh venv's pip, in the background (pip works on one core) while
    pipx is installed and runs `pipx install .` in the copy of the checkout the wheel was built from."""
    wheel, src, _ = built
    pip_args = [str(fresh_venv / "bin" / "python"), "-m", "pip", "install", str(wheel)]
    pip = subprocess.Popen(pip_args, env=INSTALL_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pipx_venv, pipx = base / "pipx-venv", base / "pipx"
        _install(sys.executable, "-m", "venv", str(pipx_venv))
        _install(str(pipx_venv / "bin" / "python"), "-m", "pip", "install", "pipx")
        env = INSTALL_ENV | {"PIPX_HOME": str(pipx / "home"), "PIPX_BIN_DIR": str(pipx / "bin"),
                             "PIPX_MAN_DIR": str(pipx / "man"), "USE_EMOJI": "0"}
        _install(str(pipx_venv / "bin" / "pipx"), "install", ".", cwd=src, env=env)
        out, err = pip.communicate(timeout=INSTALL_SECONDS)
    except BaseException:
        pip.kill()
        pip.wait()
        raise
    assert pip.returncode == 0, f"{' '.join(pip_args)} exited {pip.returncode}\n{out[-3000:]}\n{err}"
    return {"pip": _use(base / "pip", fresh_venv / "bin" / "cairn", fresh_venv / "bin" / "python"),
            "tool": _use(base / "tool", pipx / "bin" / "cairn", pipx / "home" / "venvs" / "cairn" / "bin" / "python")}


@pytest.fixture(scope="module")
def pip_installed(installed) -> Use:
    return installed["pip"]


@pytest.fixture(scope="module")
def tool_installed(installed) -> Use:
    return installed["tool"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:
        pass


@pytest.fixture(scope="module")
def pages():
    """tests/web_pages served by http.server on 127.0.0.1 (base URL)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(PAGES)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _article() -> tuple[list[str], list[str]]:
    gold = json.loads((PAGES / "gold.json").read_text(encoding="utf-8"))["article.html"]
    return gold["article"], gold["boilerplate"]


def _captures_the_article(use: Use, pages: str, db: Path) -> int:
    """`cairn add --url` of the article page: its text is kept, the page's boilerplate is not."""
    added = use.json("add", "--db", db, "--url", f"{pages}/article.html", "-d", "baking")
    source = use.json("show", "--db", db, added["id"])["source"]
    kept, dropped = _article()
    assert all(s in source for s in kept[1:]), source  # the first is cut at a colon in the page
    assert not [s for s in dropped if s in source], source
    return added["id"]


def test_a_fresh_venvs_own_pip_installs_what_capturing_a_page_needs(pip_installed, fresh_venv, pages):
    pip = subprocess.run([str(fresh_venv / "bin" / "python"), "-m", "pip", "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert pip.startswith(f"pip {ensurepip.version()} "), f"not the bundled pip: {pip}"
    check = subprocess.run([str(fresh_venv / "bin" / "python"), "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    _captures_the_article(pip_installed, pages, pip_installed.work / "pip.db")


def _verbs(use: Use) -> set[str]:
    """The verbs `cairn --help` lists (its VERB block: a name at four spaces' indent)."""
    block = use.run("--help").stdout.split("\npositional arguments:\n", 1)[1].split("\noptions:\n", 1)[0]
    return set(re.findall(r"^    ([a-z]+)\b", block, re.MULTILINE))


def test_the_tool_install_runs_every_verb_from_outside_the_checkout(tool_installed, pages, tmp_path):
    use, ran = tool_installed, set()
    db = use.work / "tour.db"

    def cairn(verb: str, *args: str, **kw) -> subprocess.CompletedProcess:
        ran.add(verb)
        return use.run(verb, "--db", db, *args, **kw)

    def js(verb: str, *args: str, **kw):
        return json.loads(cairn(verb, "--json", *args, **kw).stdout)

    assert use.run("--version").stdout.strip() == "cairn 0.1.0"
    article = _captures_the_article(use, pages, db)
    ran.add("add")
    starter = js("add", "My starter smelled of nail polish remover after a weekend away; it was hungry.")["id"]
    zettel = js("add", "Zettelkasten: one idea per note, linked by reasons.", "-d", "method")["id"]
    luhmann = js("add", "-", "--title", "Luhmann's slip box", "-d", "people",
                 input="Luhmann wrote 90,000 index cards over 40 years.")["id"]
    journal = js("today", "Fed the starter twice")["id"]
    js("link", str(luhmann), str(zettel), "--explanation", "Luhmann invented the Zettelkasten method")
    assert js("edit", str(luhmann), "--title", "Luhmann's cards")["title"] == "Luhmann's cards"
    [retitled] = [c["id"] for c in js("history", str(luhmann)) if "title" in (c["fields"] or []) and c["before"]]
    cairn("revert", str(luhmann), "--undo", str(retitled))
    assert js("show", str(luhmann))["title"] == "Luhmann's slip box"

    assert "Indexed" in cairn("index").stdout
    assert js("search", "index cards Luhmann kept")[0]["id"] == luhmann
    assert js("search", "rye flour brings the culture back sooner", "--mode", "vector")[0]["id"] == article
    assert str(luhmann) in cairn("hubs").stdout and "Journal" in cairn("list").stdout
    assert "Nodes" in cairn("stats").stdout
    assert js("doctor")["clean"]

    duplicate = js("add", "Luhmann's slip box: 90,000 cards", "--title", "Slip box")["id"]
    cairn("merge", str(luhmann), str(duplicate), "--yes")
    cairn("rm", str(journal), "--yes")
    assert {row["node_id"] for row in js("trash")} == {journal, duplicate}  # a merged node goes there too
    cairn("restore", str(journal))
    [edge] = [e["id"] for e in js("show", str(luhmann))["edges"] if e["to_node_id"] == zettel]
    cairn("unlink", str(edge), "--yes")
    assert js("show", str(luhmann))["edges"] == []
    js("link", str(luhmann), str(zettel), "--explanation", "Luhmann invented the Zettelkasten method")

    backup = use.work / "tour-backup.db"
    cairn("backup", str(backup))
    assert backup.stat().st_size > 0
    exported = use.work / "exported"
    cairn("export", str(exported))
    assert any("Luhmann" in p.name for p in exported.glob("*.md"))
    vault = use.work / "vault"
    vault.mkdir()
    (vault / "Basil.md").write_text("Basil likes warmth and full sun.\n", encoding="utf-8")
    cairn("import", str(vault))
    assert js("search", "Basil", "--mode", "fts")[0]["title"] == "Basil"
    synced = use.work / "synced"
    synced.mkdir()
    cairn("sync", str(synced), "--yes")
    assert any(p.name.startswith("Luhmann") for p in synced.glob("*.md"))
    assert "No sync conflict" in cairn("conflicts").stdout
    _watch_until_ctrl_c(use, db, synced)
    ran.add("watch")

    assert js("context", "Who kept index cards?", "--provider", "offline")["provider"] == "offline"
    with FakeAnthropic() as anth:
        keyed = replace(use, env=use.env | {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anth.base_url})
        anth.script.add(text(f"Luhmann kept his index cards for 40 years [NODE:{luhmann}]."))
        asked = keyed.run("ask", "--db", db, "Who kept index cards?", "--provider", "anthropic", "--focus", luhmann)
        ran.add("ask")
        assert "40 years" in asked.stdout
        [chat] = [c["id"] for c in js("chats")]
        assert "Luhmann kept his index cards" in js("chats", "show", str(chat))["markdown"]
        anth.responder = partial(_retire, luhmann)  # the distil request: the model retires the note
        assert "Retirements" in keyed.run("distil", "--db", db, chat, "--provider", "anthropic").stdout
        assert len(anth.requests) == 2
    ran.add("distil")
    cairn("distil", str(chat), "--accept", "1", "--yes")
    assert [n["id"] for n in js("retired")] == [luhmann]
    cairn("unretire", str(luhmann))
    assert js("retired") == []

    cairn("config", "set", "chat.provider", "offline")
    assert 'provider = "offline"' in cairn("config").stdout
    assert "weekly-review" in cairn("skills", "list").stdout
    assert "weekly" in cairn("skills", "show", "weekly-review").stdout.lower()
    assert [p["target_id"] for p in js("integrate", str(starter))["proposals"]][0] == article
    cairn("integrate", str(starter), "--accept", "1", "--explanation", '1="Both are about a hungry starter"', "--yes")
    mention = js("add", "Read more about Luhmann's slip box.")["id"]
    assert [p["target_id"] for p in js("links", str(mention))["proposals"]] == [luhmann]
    cairn("links", str(mention), "--accept", "1", "--yes")
    assert {e["to_node_id"] for n in (starter, mention) for e in js("show", str(n))["edges"]} == {article, luhmann}
    assert json.loads(cairn("mcp", "--print-config").stdout)["mcpServers"]["cairn"]["command"] == str(use.cairn)
    ran.add("eval")
    evaluated = json.loads(use.run("eval", "beir", _tiny_beir(tmp_path), "--mode", "fts", "--json",
                                   "--db", use.work / "eval.db").stdout)
    assert evaluated["mode"] == "fts" and evaluated["queries"] == 2 and evaluated["recall@100"] == 1.0, evaluated
    ran.add("completion")
    assert "complete" in use.run("completion", "bash").stdout

    listed = _verbs(use)
    assert len(listed) > 30 and "add" in listed and "completion" in listed, listed
    missing = listed - ran
    assert not missing, f"verbs `cairn --help` lists that this tour did not run: {sorted(missing)}"


async def test_the_tool_install_serves_mcp_over_stdio(tool_installed):
    use = tool_installed
    assert await mcp_tool_names(use.cairn, use.work / "mcp.db", use.env, use.work) == TOOLS


def test_the_tool_install_starts_the_app(tool_installed):
    done = subprocess.run([str(tool_installed.python), "-c", HEADLESS_APP, str(tool_installed.work / "app.db")],
                          cwd=tool_installed.work, env=tool_installed.env, capture_output=True, text=True,
                          timeout=RUN_SECONDS)
    assert done.stdout.strip().endswith("panes mounted"), done.stderr


def _retire(node: int, body: dict):
    """A distil reply retiring `node`, citing the user's message as the distil request shows it."""
    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, (list, dict)):
            for item in value.values() if isinstance(value, dict) else value:
                yield from strings(item)

    said = re.search(r'<message id="(\d+)" role="user">', "\n".join(strings(body["messages"])))
    assert said, body
    return text(json.dumps({"proposals": [{"kind": "retirement", "node_id": node, "source_message_id": int(said[1]),
                                           "reason": "Superseded by a newer note on the cards."}]}))


def _watch_until_ctrl_c(use: Use, db: Path, folder: Path) -> None:
    """`cairn watch FOLDER` brings a new file in, then stops on Ctrl-C."""
    proc = subprocess.Popen([sys.executable, "-S", "-c", _SIGINT_AS_AT_A_TERMINAL, str(use.cairn), "watch",
                             "--db", str(db), str(folder), "--no-index", "--yes"], cwd=use.work, env=use.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        (folder / "Thyme.md").write_text("Thyme wants dry soil.\n", encoding="utf-8")
        deadline = time.monotonic() + 60
        while "Thyme" not in use.run("search", "--db", db, "Thyme", "--mode", "fts", "--json").stdout:
            assert time.monotonic() < deadline and proc.poll() is None, "cairn watch did not bring Thyme.md in"
            time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Stopped watching." in out, out + err


def _tiny_beir(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-beir"
    folder.mkdir()
    docs = {"d1": "Plants turn sunlight into glucose.", "d2": "Magma rises and erupts as lava.",
            "d3": "Sourdough rises with wild yeast."}
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                                 for k, v in docs.items()))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "lava eruption"}) + "\n"
                                          + json.dumps({"_id": "q2", "text": "wild yeast bread"}) + "\n")
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td3\t1\n")
    return folder
