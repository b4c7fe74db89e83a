"""The built wheel is the whole product: built from a copy of the tracked tree, installed without -e
into a fresh venv, it imports every module, runs `cairn` (add, index, search, mcp) and starts the app,
all from outside the checkout. Its one top-level package is `cairn` (core/, tui/, styles/ inside it,
setup.py): installed beside another distribution's `core`, `tui` and `styles`, neither overwrites the
other. tests/test_user_installs.py installs it as a user does (with its dependencies, pipx)."""

from __future__ import annotations

import base64
import configparser
import csv
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from test_mcp import TOOLS

ROOT = Path(__file__).resolve().parent.parent
TREES = ("core", "tui", "styles")  # the checkout's folders; in the wheel: cairn/core, cairn/tui, cairn/styles
FOREIGN = "NAME = 'another distribution'\n"  # the __init__.py of another distribution's core, tui and styles
TIMEOUT = 120  # generous: two shared cores; no assertion is about speed

if importlib.util.find_spec("pip") is None or importlib.util.find_spec("venv") is None:
    pytest.skip("pip or venv is not available to this Python", allow_module_level=True)


@dataclass
class Installed:
    venv: Path
    site: Path  # the new venv's site-packages
    wheel: Path
    tree: list[str]  # the checkout's files that were built, relative to ROOT
    work: Path  # a cwd outside the checkout
    env: dict[str, str]

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def run(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run(list(args), cwd=self.work, env=self.env, input=input, capture_output=True,
                              text=True, timeout=TIMEOUT)
        assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done


def _source_files() -> list[str]:
    """The checkout's files as git knows them (tracked, plus new ones not ignored), that exist now."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    return sorted({f for f in listed if f and (ROOT / f).is_file()})


def _module_name(path: str) -> str:
    parts = list(Path(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def in_wheel(path: str) -> str:
    """Where a file of the checkout is in the wheel: core/x.py -> cairn/core/x.py (cairn/ stays cairn/)."""
    return f"cairn/{path}" if path.split("/")[0] in TREES else path


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args], check=True,
                   timeout=TIMEOUT)


def build_wheel(base: Path) -> tuple[Path, Path, list[str]]:
    """(wheel, the copy of the checkout it was built from, that copy's files), without the network."""
    src, dist = base / "src", base / "dist"
    tree = _source_files()
    for rel in tree:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    _pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(dist), str(src))
    [wheel] = dist.glob("cairn-*.whl")
    return wheel, src, tree


def _foreign_wheel(base: Path) -> Path:
    """Another distribution ("other-tools") with top-level packages named core, tui and styles."""
    src = base / "other-src"
    for name in TREES:
        (src / name).mkdir(parents=True)
        (src / name / "__init__.py").write_text(FOREIGN)
    (src / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=77"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "other-tools"
        version = "1.0"
        [tool.setuptools]
        packages = ["core", "tui", "styles"]
    """))
    _pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(base / "other-dist"), str(src))
    [wheel] = (base / "other-dist").glob("other_tools-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    base = tmp_path_factory.mktemp("packaging")
    venv, work = base / "venv", base / "work"
    wheel, _, tree = build_wheel(base)

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT)
    # A shared environment: another distribution's core, tui and styles are there first.
    _pip("--python", str(venv / "bin" / "python"), "install", "--no-deps", str(_foreign_wheel(base)))
    _pip("--python", str(venv / "bin" / "python"), "install", "--no-deps", str(wheel))
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", purelib], capture_output=True, text=True,
                               check=True).stdout.strip())
    # The dependencies come from the dev venv without a download: a path line in a .pth is appended to
    # sys.path, while the .pth files in that directory (the dev venv's editable cairn) are not processed.
    (site / "dev_venv_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    work.mkdir()
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CAIRN_DEBUG", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env |= {"HOME": str(base / "home"), "CAIRN_HOME": str(base / "cairnhome"), "XDG_CACHE_HOME": str(base / "cache")}
    return Installed(venv=venv, site=site, wheel=wheel, tree=tree, work=work, env=env)


def _wheel_names(installed: Installed) -> list[str]:
    with zipfile.ZipFile(installed.wheel) as whl:
        return whl.namelist()


def _console_script(installed: Installed) -> Path:
    """`cairn` as the wheel's entry_points.txt declares it (the CLI's module path may move)."""
    with zipfile.ZipFile(installed.wheel) as whl:
        [name] = [n for n in whl.namelist() if n.endswith(".dist-info/entry_points.txt")]
        points = configparser.ConfigParser()
        points.read_string(whl.read(name).decode())
    assert "cairn" in points["console_scripts"], dict(points["console_scripts"])
    script = installed.venv / "bin" / "cairn"
    assert script.is_file(), f"the install did not create {script}"
    return script


def test_the_wheel_holds_every_module_and_data_file_of_the_checkout_inside_one_package(installed):
    names = set(_wheel_names(installed))
    ours = [f for f in installed.tree if f.split("/")[0] in (*TREES, "cairn")]
    modules = [f for f in ours if f.endswith(".py")]
    assert len(modules) > 50, "the source listing found too few modules to mean anything"
    dropped = sorted(f for f in modules if in_wheel(f) not in names)
    assert not dropped, f"modules missing from the wheel: {dropped}"

    data = [f for f in ours if f.startswith("styles/") and f.endswith(".tcss")
            or f.startswith("core/agent/skills_builtin/") and f.endswith(".md")]
    assert any(f.endswith(".tcss") for f in data) and any(f.endswith(".md") for f in data)
    missing = sorted(f for f in data if in_wheel(f) not in names)
    assert not missing, f"package data missing from the wheel: {missing}"
    strays = sorted(n for n in names if not n.startswith("cairn/") and ".dist-info/" not in n)
    assert not strays, f"the wheel carries files outside its one package, cairn/: {strays}"


def _record(site: Path, dist: str) -> dict[str, str]:
    """path -> sha256 of every file the distribution's RECORD lists with a hash."""
    [info] = site.glob(f"{dist}-*.dist-info")
    rows = csv.reader((info / "RECORD").read_text().splitlines())
    return {path: digest for path, digest, _ in rows if digest}


def test_cairn_and_another_distributions_core_tui_styles_share_an_environment(installed):
    cairn_files, other_files = _record(installed.site, "cairn"), _record(installed.site, "other_tools")
    shared = sorted(set(cairn_files) & set(other_files))
    assert not shared, f"both distributions own these files (the second install overwrote them): {shared}"
    for path, digest in {**cairn_files, **other_files}.items():
        data = (installed.site / path).read_bytes()
        assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode(), \
            f"{path} was overwritten by the other distribution's install"
    # Outside Cairn the names are the other distribution's; in Cairn's process, Cairn's.
    plain = installed.run(installed.python, "-c", "import core, tui, styles; print(core.NAME, tui.NAME, styles.NAME)")
    assert plain.stdout.split() == ["another", "distribution"] * 3
    ours = installed.run(installed.python, "-c", "import cairn, core; print(core.__file__)")
    assert ours.stdout.strip() == str(installed.site / "cairn" / "core" / "__init__.py")
    # The other `core` imported first: Cairn says so rather than running on it.
    late = subprocess.run([installed.python, "-c", "import core, cairn"], cwd=installed.work, env=installed.env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert late.returncode == 1 and "A package named 'core'" in late.stderr.splitlines()[-1], late.stderr


def test_every_module_of_the_wheel_imports_from_the_new_venv(installed):
    # cairn/core/x.py is the module core.x once `cairn` is imported (cairn/__init__.py)
    modules = sorted(_module_name(n.removeprefix("cairn/") if n.split("/")[1] in TREES else n)
                     for n in _wheel_names(installed)
                     if n.endswith(".py") and not n.endswith("__main__.py"))  # __main__ would run the CLI
    script = textwrap.dedent("""
        import importlib, json, sys
        import cairn
        found = {}
        for name in json.loads(sys.argv[1]):
            found[name] = importlib.import_module(name).__file__
        print(json.dumps(found))
    """)
    found = json.loads(installed.run(installed.python, "-c", script, json.dumps(modules)).stdout)
    assert set(found) == set(modules) and {"cairn", "core", "tui", "styles"} <= set(found)
    assert found["core"].startswith(str(installed.site / "cairn")), "the dev venv's editable cairn was imported"
    elsewhere = {m: f for m, f in found.items() if not f.startswith(str(installed.site / "cairn"))}
    assert not elsewhere, f"modules imported from outside the new venv's cairn/: {elsewhere}"


def test_the_installed_cairn_adds_indexes_and_finds_a_note(installed):
    cairn = str(_console_script(installed))
    db = str(installed.work / "cli.db")
    assert installed.run(cairn, "--version").stdout.strip().endswith("0.1.0")
    added = installed.run(cairn, "add", "--db", db, "--title", "Moraines",
                          "Glaciers leave moraines of rock and gravel where they stop.")
    assert added.stdout.strip(), added.stderr
    installed.run(cairn, "index", "--db", db)
    hits = json.loads(installed.run(cairn, "search", "--db", db, "--json", "moraines").stdout)
    assert [h["title"] for h in hits] == ["Moraines"]


def test_the_installed_cairn_reads_a_pdf_with_its_own_reader_whatever_the_folder_holds(installed):
    """The PDF reader runs as a child (`python -I .../cairn/core/capture/pdfium_pages.py`): the installed
    one, not one in a `core/` folder that happens to be in the user's current directory."""
    from pdf_maker import make_pdf

    folder = installed.work / "project"  # its own folder: the other tests run from installed.work
    decoy = folder / "core" / "capture"
    decoy.mkdir(parents=True, exist_ok=True)
    for name in ("../__init__.py", "__init__.py"):
        (decoy / name).write_text("")
    (decoy / "pdfium_pages.py").write_text('print(\'{"pages": [{"text": "decoy"}]}\')\n')
    pdf = folder / "moraines.pdf"
    pdf.write_bytes(make_pdf(["Moraines\nGlaciers leave moraines of rock where they stop.", "Page two."]))
    db = str(folder / "pdf.db")
    cairn = str(_console_script(installed))

    def run(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([cairn, *args], cwd=folder, env=installed.env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done

    run("add", "--db", db, str(pdf))
    shown = json.loads(run("show", "--db", db, "--json", "1").stdout)
    assert "Glaciers leave moraines" in shown["source"] and "decoy" not in shown["source"]
    assert shown["metadata"]["capture"]["extractor"].startswith("pypdfium2 ")


async def mcp_tool_names(cairn: Path, db: Path, env: dict[str, str], cwd: Path) -> list[str]:
    """The tools `cairn mcp` lists to a real MCP client after the handshake, over stdio."""
    params = StdioServerParameters(command=str(cairn), args=["mcp", "--db", str(db)],
                                   env={k: env[k] for k in ("HOME", "CAIRN_HOME")}, cwd=cwd)
    with open(cwd / "mcp-stderr.log", "w") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                await session.initialize()
                return [t.name for t in (await session.list_tools()).tools]


async def test_the_installed_cairn_mcp_speaks_mcp_over_stdio(installed):
    names = await mcp_tool_names(_console_script(installed), installed.work / "mcp.db", installed.env, installed.work)
    assert names == TOOLS


# The app started headless by the installed Python (argv[1]: the database); prints "panes mounted".
HEADLESS_APP = textwrap.dedent("""
    import asyncio, sys, time
    from pathlib import Path
    import cairn
    from tui.app import CairnApp
    from tui.widgets.chat_pane import ChatPane
    from tui.widgets.focus_panel import FocusPanel
    from tui.widgets.node_browser import NodeList

    async def main():
        app = CairnApp(Path(sys.argv[1]), first_run_prompt=False)
        async with app.run_test(size=(120, 40)) as pilot:
            # The chat pane is mounted after the first frame; the switcher shows it once mounted.
            def ready():
                panes = [w for kind in (NodeList, FocusPanel, ChatPane) for w in app.query(kind)]
                mounted = len(panes) == 3 and all(w.is_mounted for w in panes)
                return mounted and app.query_one("#right").current == "chat"

            deadline = time.monotonic() + 30
            while not ready():
                assert time.monotonic() < deadline, "the main screen's panes did not mount"
                await pilot.pause(0.05)
            await pilot.pause()
            app.exit()
        print("panes mounted")

    asyncio.run(main())
""")


def test_the_installed_app_starts_headless_with_its_panes(installed):
    done = installed.run(installed.python, "-c", HEADLESS_APP, str(installed.work / "app.db"))
    assert done.stdout.strip().endswith("panes mounted"), done.stderr
