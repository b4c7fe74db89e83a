"""The embedder's graph, quantised once per machine (core/index/prepared_model.py), and what a change
of graph does to a database embedded by the other one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from core.errors import EmbedderError
from core.index import prepared_model
from core.index.embedder import GRAPHS, Embedder, model_path
from core.index.indexer import Indexer
from core.search.searcher import Searcher

ROOT = Path(__file__).resolve().parent.parent
TEXTS = ["Sourdough needs a lively starter and a long cold proof.",
         "The compost heap should be turned every two weeks in summer.",
         "Kafka partitions order messages only within one partition."]


def test_the_default_graph_is_prepared_once_in_the_cache_and_named_by_what_it_was_made_from():
    path = prepared_model.prepared_path()
    assert path.parent == prepared_model.cache_dir()
    assert prepared_model.RECIPE in path.name and "ort" in path.name and "onnx" in path.name
    Embedder().embed(TEXTS[:1])
    assert path.is_file()
    stamp = path.stat().st_mtime_ns
    assert prepared_model.prepare(model_path()) == path and path.stat().st_mtime_ns == stamp  # not made again


def test_the_quantised_graph_is_another_model_close_to_the_shipped_one(embedder):
    shipped = Embedder(graph="shipped")
    a, b = embedder.embed(TEXTS), shipped.embed(TEXTS)
    assert embedder.name == GRAPHS["quantised"] != shipped.name == GRAPHS["shipped"]
    cosines = (a * b).sum(axis=1)
    assert not np.array_equal(a, b)  # really another graph
    assert cosines.min() > 0.95, cosines  # and still the same model (SciFact: bench/results/store.json)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_preparing_in_a_new_folder_writes_one_whole_file_even_with_two_processes_at_once(tmp_path):
    folder = tmp_path / "models"
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from core.index import prepared_model
        from core.index.embedder import model_path
        print(prepared_model.prepare(model_path(), Path({str(folder)!r})))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert {o[0].strip() for o in outs} == {str(prepared_model.prepared_path(folder))}
    left = sorted(p.name for p in folder.iterdir())
    assert left == [".prepare.lock", prepared_model.prepared_path(folder).name]  # no half-written files


def test_an_unreadable_prepared_file_is_made_again(monkeypatch, tmp_path):
    monkeypatch.setattr(prepared_model, "cache_dir", lambda: tmp_path / "models")
    target = prepared_model.prepared_path()
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not a model")
    vectors = Embedder().embed(TEXTS[:1])
    assert vectors.shape == (1, 384) and target.stat().st_size > 1_000_000


def test_without_the_onnx_package_the_error_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)  # as if onnx were not installed
    target = tmp_path / "model.onnx"
    with pytest.raises(EmbedderError, match="needs the onnx package.*reinstall Cairn"):
        prepared_model._quantise(model_path(), target)  # what the preparing child runs
    assert not target.exists()


def test_a_failure_in_the_preparing_process_is_one_clear_sentence_and_leaves_no_file(monkeypatch, tmp_path):
    monkeypatch.setattr(prepared_model, "cache_dir", lambda: tmp_path / "models")
    broken = tmp_path / "shipped.onnx"
    broken.write_bytes(b"\x00" * 100)  # not a model
    with pytest.raises(EmbedderError, match=r"^Cannot prepare the embedding model from .*shipped\.onnx"):
        prepared_model.prepare(broken)
    assert [p.name for p in (tmp_path / "models").iterdir()] == [".prepare.lock"]


def test_a_cache_folder_that_cannot_be_written_is_a_clear_error(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr(prepared_model, "cache_dir", lambda: blocker / "models")
    with pytest.raises(EmbedderError, match="Cannot create .*prepared embedding model"):
        Embedder().embed(TEXTS[:1])


def test_a_database_embedded_by_the_other_graph_is_re_embedded_and_not_searched_by_meaning_before(store, embedder):
    for text in TEXTS:
        store.add_node(text[:30], text)
    old = Embedder(graph="shipped")
    Indexer(store, old).run()
    assert store.meta("embedder") == old.name

    indexer = Indexer(store, embedder)
    assert indexer.other_model() == old.name
    searcher = Searcher(store, embedder)
    assert not searcher.vectors_match()
    assert searcher.search("sourdough starter", mode="vector") == []  # two vector spaces are not compared
    assert [h["title"] for h in searcher.search("sourdough", mode="hybrid")][:1] == [TEXTS[0][:30]]  # keywords still work

    report = indexer.run()
    assert report.indexed == len(TEXTS) and indexer.other_model() is None
    assert store.meta("embedder") == embedder.name
    kinds = {r[0] for r in store.db.execute("SELECT DISTINCT embedding_type FROM chunks")}
    assert kinds == {embedder.name}
    assert searcher.vectors_match()
    assert searcher.search("bread starter", mode="vector")[0]["title"] == TEXTS[0][:30]


def test_cairn_index_says_it_re_embeds_for_the_new_graph(store, embedder, cairn_cmd, cli_env, db_path):
    store.add_node("Bread", TEXTS[0])
    Indexer(store, Embedder(graph="shipped")).run()
    done = subprocess.run([*cairn_cmd, "index", "--db", str(db_path)], capture_output=True, text=True,
                          env=cli_env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"The vectors were made by {GRAPHS['shipped']}; re-embedding every node with {GRAPHS['quantised']}" in done.stdout
    assert "Indexed 1 node" in done.stdout


def test_the_preparing_child_runs_cairns_module_not_a_core_folder_in_the_current_directory(tmp_path):
    """The child is `python -m core.index.prepared_model`; -m puts the cwd first on sys.path, so a `core/`
    folder where the user stands would be run instead (here it would write a model that is not one)."""
    decoy = tmp_path / "project" / "core" / "index"
    decoy.mkdir(parents=True)
    for init in (decoy.parent / "__init__.py", decoy / "__init__.py"):
        init.write_text("")
    (decoy / "prepared_model.py").write_text("import sys; open(sys.argv[2], 'w').write('decoy')\n")
    (tmp_path / "not-a-model.onnx").write_bytes(b"not a model")  # the real child refuses it at once
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from core.errors import EmbedderError
        from core.index import prepared_model
        try:
            prepared_model._quantise_in_child(Path({str(tmp_path / "not-a-model.onnx")!r}), Path("out.onnx"))
        except EmbedderError as exc:
            print("refused:", exc)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path / "project", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused:"), done.stdout
    assert not (tmp_path / "project" / "out.onnx").exists()
