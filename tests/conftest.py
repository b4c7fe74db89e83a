"""Shared fixtures: a real SQLite file per test and the real offline embedder, loaded once."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """No test reads or writes the real user's data: CAIRN_HOME and HOME point at temp dirs."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("CAIRN_HOME", str(home / "cairn"))
    monkeypatch.setenv("HOME", str(home))
    # One cache for the whole session (and every subprocess, which inherits the environment): the
    # embedder's prepared graph (core/index/prepared_model.py) is made once, not once per test.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    from core.graph import history
    from core.providers import local_server, local_window

    local_window._seen.clear()  # a port a closed fake used may come back with another window
    local_server._seen.clear()  # ... with another model, or tokenizer
    local_server._counted.clear()
    history.set_process_actor("you")  # the CLI's main() and the app set it for the whole process
    yield


@pytest.fixture(scope="session")
def embedder():
    from core.index.embedder import Embedder

    return Embedder()


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "cairn.db"


@pytest.fixture
def store(db_path):
    from core.graph.store import Store

    s = Store(db_path)
    yield s
    s.close()


@pytest.fixture
def indexer(store, embedder):
    from core.index.indexer import Indexer

    return Indexer(store, embedder)


@pytest.fixture
def cairn_cmd():
    """The installed console script (falls back to the module when run from a bare checkout)."""
    script = Path(sys.executable).parent / "cairn"
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]


# Runs the command after it with SIGINT at its default (exec keeps SIG_DFL, so Python installs its
# KeyboardInterrupt handler), whatever this process was started with.
_SIGINT_AS_AT_A_TERMINAL = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                            "os.execv(sys.argv[1], sys.argv[1:])")


@pytest.fixture
def ctrl_c_cairn_cmd(cairn_cmd):
    """`cairn_cmd` for a test that sends the process a Ctrl-C (SIGINT), as a terminal would. A process
    started with SIGINT ignored hands that on to its children, and Python then installs no KeyboardInterrupt
    handler: the test's SIGINT would do nothing (`cairn watch` runs on, `cairn ask` finishes its reply).
    That is how a non-interactive shell starts a background job (`make test &`, a CI step run that way),
    so the test suite may run so; a terminal's Ctrl-C only ever reaches a foreground job, whose SIGINT
    is at its default."""
    return [sys.executable, "-S", "-c", _SIGINT_AS_AT_A_TERMINAL, *cairn_cmd]


@pytest.fixture
def cli_env(tmp_path):
    env = dict(os.environ)
    env["CAIRN_HOME"] = str(tmp_path / "cairnhome")
    env["HOME"] = str(tmp_path / "home")
    env.pop("CAIRN_DEBUG", None)
    return env
