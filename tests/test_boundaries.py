"""Architecture boundaries that are easy to break by accident (DESIGN.md, Layout and Paths)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, env: dict | None = None, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def _modules(package: str) -> list[str]:
    """Every module of a package, its subpackages' included (`core.graph.store`, `core.graph`, ...)."""
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_core_never_imports_textual_or_tui():
    modules = _modules("core")
    assert len(modules) > 40  # every subpackage's modules, not only core/*.py
    code = (
        "import importlib, json, sys\n"
        "mods = json.loads(sys.argv[1])\n"
        "for m in mods: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'tui'))\n"
        "print(json.dumps({'loaded': sorted(m for m in mods if m in sys.modules), 'bad': bad}))\n"
    )
    proc = _python(code, None, json.dumps(modules))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["loaded"] == modules
    assert result["bad"] == []


def test_cairn_add_does_not_load_the_embedder(tmp_path):
    env = dict(os.environ, CAIRN_HOME=str(tmp_path / "ch"), HOME=str(tmp_path / "home"))
    code = (
        "import json, sys\n"
        "from tui.cli.main import main\n"
        "rc = main(['add', 'a quick note', '--db', sys.argv[1]])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'onnxruntime', 'tokenizers', 'textual'})\n"
        "sys.stderr.write(json.dumps({'rc': rc, 'heavy': heavy}) + '\\n')\n"
    )
    proc = _python(code, env, str(tmp_path / "x.db"))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stderr.strip().splitlines()[-1])
    assert result == {"rc": 0, "heavy": []}
    assert proc.stdout.strip() == "1"


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_embedding_writes_nothing_outside_cairn_home(cairn_cmd, tmp_path):
    """onnxruntime > 1.22.1 writes ~/.cache/Microsoft on every run; nothing may appear in HOME or TMPDIR."""
    home, cairn_home, tmpdir = tmp_path / "home", tmp_path / "cairnhome", tmp_path / "tmp"
    home.mkdir()
    tmpdir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), CAIRN_HOME=str(cairn_home), TMPDIR=str(tmpdir))
    env.pop("CAIRN_DEBUG", None)

    def cairn(*args):
        proc = subprocess.run([*cairn_cmd, *args], env=env, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, (args, proc.stderr)
        return proc.stdout

    cairn("add", "Glaciers carve valleys as they move slowly downhill.")
    cairn("index")
    hits = json.loads(cairn("search", "ice shaping the landscape", "--json"))
    assert hits and hits[0]["title"].startswith("Glaciers")
    cairn("search", "glacier", "--mode", "vector")

    # Only Cairn's own cache folder: the embedding model, quantised on first use (core/index/prepared_model.py).
    cache = Path(".cache") / "cairn"  # platformdirs' user_cache_dir on Linux without XDG_CACHE_HOME
    outside = [p for p in _tree(home) if not (p == ".cache" or Path(p) == cache or Path(p).is_relative_to(cache))]
    assert outside == []
    assert any(p.endswith(".onnx") for p in _tree(home / cache / "models"))
    assert _tree(tmpdir) == []
    assert (cairn_home / "cairn.db").is_file()
    assert {p.name for p in tmp_path.iterdir()} == {"home", "cairnhome", "tmp"}
