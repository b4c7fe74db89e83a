"""`cairn eval beir` on a tiny hand-made BEIR collection, and the metric functions by hand."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from core.ops.beir import load_qrels, mrr_at, ndcg_at, recall_at

DOCS = {
    "d1": ("Photosynthesis", "Plants convert sunlight, water and carbon dioxide into glucose and oxygen in chloroplasts."),
    "d2": ("Volcanoes", "Volcanic eruptions eject lava, ash and gases when magma rises through the crust."),
    "d3": ("Sourdough bread", "Sourdough bread is leavened by a starter of wild yeast and lactobacilli."),
    "d4": ("Chess openings", "The Sicilian Defence is a chess opening that answers 1.e4 with c5."),
    "d5": ("Black holes", "A black hole is a region of spacetime where gravity prevents even light from escaping."),
    "d6": ("Honeybees", "Honeybees communicate the location of flowers to the hive with a waggle dance."),
    "d7": ("Python generators", "A Python generator function uses yield to produce a lazy sequence of values."),
    "d8": ("Roman aqueducts", "Roman aqueducts carried water into cities using gravity and stone arches."),
    "d9": ("Jazz improvisation", "Jazz musicians improvise melodies over chord changes and swing rhythms."),
    "d10": ("Coral reefs", "Coral reefs are built by colonies of tiny polyps and bleach when the ocean warms."),
    "d11": ("Marathon training", "Marathon runners build endurance with long slow runs and tapering before the race."),
    "d12": ("Tea ceremony", "The Japanese tea ceremony is a ritual preparation of powdered matcha green tea."),
}
TEST_QUERIES = {
    "q1": ("how do plants turn sunlight into glucose", {"d1": 1}),
    "q2": ("magma lava eruption", {"d2": 1}),
    "q3": ("wild yeast starter bread", {"d3": 1}),
    "q4": ("gravity light escaping black hole", {"d5": 2, "d8": 0}),
    "q5": ("waggle dance of honeybees", {"d6": 1}),
    "q6": ("python yield generator", {"d7": 1}),
}
TRAIN_QUERIES = {
    "t1": ("jazz improvisation over chord changes", {"d9": 1}),
    "t2": ("coral polyps bleaching", {"d10": 1}),
    "t3": ("marathon endurance training", {"d11": 1, "d12": 0}),
}
KEYS = {"mode", "split", "ndcg@10", "recall@100", "queries", "seconds"}


def _write_split(folder: Path, queries_file: str, qrels_file: str, queries: dict, extra_query: str) -> None:
    with (folder / queries_file).open("w", encoding="utf-8") as fh:
        for qid, (text, _) in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text, "metadata": {}}) + "\n")
        # A query without judgements is not counted.
        fh.write(json.dumps({"_id": extra_query, "text": "unjudged question about nothing", "metadata": {}}) + "\n")
    with (folder / qrels_file).open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid, (_, rels) in queries.items():
            for doc, grade in rels.items():
                fh.write(f"{qid}\t{doc}\t{grade}\n")


@pytest.fixture
def collection(tmp_path) -> Path:
    folder = tmp_path / "tiny-beir"
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for doc_id, (title, text) in DOCS.items():
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text, "metadata": {}}) + "\n")
        fh.write("\n")  # blank lines are tolerated
    _write_split(folder, "queries.jsonl", "qrels.tsv", TEST_QUERIES, "q99")
    _write_split(folder, "queries-train.jsonl", "qrels-train.tsv", TRAIN_QUERIES, "t99")
    return folder


def _eval(cairn_cmd, env, *args, rc=0):
    proc = subprocess.run([*cairn_cmd, "eval", "beir", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == rc, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def _check(result: dict, mode: str, split: str, queries: int, min_ndcg: float = 0.5) -> None:
    assert KEYS <= set(result)
    assert result["mode"] == mode and result["split"] == split
    assert result["queries"] == queries
    assert 0.0 <= result["ndcg@10"] <= 1.0 and 0.0 <= result["recall@100"] <= 1.0
    assert isinstance(result["seconds"], (int, float)) and result["seconds"] >= 0
    assert result["ndcg@10"] > min_ndcg, result
    assert result["recall@100"] == 1.0, result  # 12 documents: every relevant one is within 100


def test_eval_beir_every_mode(cairn_cmd, cli_env, collection, tmp_path):
    db = tmp_path / "x.db"
    fts = json.loads(_eval(cairn_cmd, cli_env, collection, "--mode", "fts", "--json", "--db", db).stdout)
    _check(fts, "fts", "test", len(TEST_QUERIES))

    both = json.loads(_eval(cairn_cmd, cli_env, collection, "--mode", "vector", "--mode", "hybrid", "--json",
                            "--db", db).stdout)
    assert isinstance(both, list) and [r["mode"] for r in both] == ["vector", "hybrid"]
    for r in both:
        _check(r, r["mode"], "test", len(TEST_QUERIES))

    train = json.loads(_eval(cairn_cmd, cli_env, collection, "--mode", "hybrid", "--split", "train", "--json",
                             "--db", db).stdout)
    _check(train, "hybrid", "train", len(TRAIN_QUERIES))

    limited = json.loads(_eval(cairn_cmd, cli_env, collection, "--mode", "fts", "--max-queries", "2", "--json",
                               "--db", db).stdout)
    assert limited["queries"] == 2

    # The corpus was ingested once, into exactly the database asked for.
    from core.graph.store import Store

    with Store(db) as store:
        assert store.counts()["nodes"] == len(DOCS)
        assert store.counts()["pending"] == 0
    cairn_home = Path(cli_env["CAIRN_HOME"])
    assert not cairn_home.exists() or not any(cairn_home.rglob("*.db"))


def test_eval_beir_plain_output(cairn_cmd, cli_env, collection, tmp_path):
    out = _eval(cairn_cmd, cli_env, collection, "--mode", "fts", "--db", tmp_path / "y.db").stdout
    assert "nDCG@10" in out and "recall@100" in out and f"({len(TEST_QUERIES)} queries" in out


def test_eval_beir_missing_folder(cairn_cmd, cli_env, tmp_path):
    missing = tmp_path / "nope"
    proc = _eval(cairn_cmd, cli_env, missing, "--mode", "fts", "--db", tmp_path / "z.db", rc=1)
    assert proc.stderr.strip() == f"cairn: {missing} is not a folder."


def test_eval_beir_folder_without_corpus(cairn_cmd, cli_env, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _eval(cairn_cmd, cli_env, empty, "--mode", "fts", "--db", tmp_path / "z.db", rc=1)
    assert "corpus.jsonl is missing" in proc.stderr


def test_eval_beir_folder_without_corpus_default_db(cairn_cmd, cli_env, tmp_path):
    """Without --db the eval database name is derived from corpus.jsonl: still a sentence, not a crash."""
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _eval(cairn_cmd, cli_env, empty, "--mode", "fts", rc=1)
    assert "corpus.jsonl is missing" in proc.stderr
    assert "unexpected error" not in proc.stderr


# -- metrics by hand -------------------------------------------------------------------------------
def test_ndcg_by_hand():
    assert ndcg_at(["a", "b", "c"], {"a": 1}) == 1.0
    assert ndcg_at(["a", "b", "c"], {"b": 1}) == pytest.approx(1 / math.log2(3))  # 0.6309
    # Graded: dcg = 2/log2(3) + 1/log2(4); ideal = 2/log2(2) + 1/log2(3).
    expected = (2 / math.log2(3) + 0.5) / (2 + 1 / math.log2(3))
    assert ndcg_at(["x", "a", "b"], {"a": 2, "b": 1}) == pytest.approx(expected)
    assert expected == pytest.approx(0.66967, abs=1e-5)
    assert ndcg_at(["x", "y", "a"], {"a": 1}, k=2) == 0.0
    assert ndcg_at(["a"], {}) == 0.0
    assert ndcg_at([], {"a": 1}) == 0.0
    assert ndcg_at([None, "a"], {"a": 1}) == pytest.approx(1 / math.log2(3))
    # Zero-graded judgements add nothing.
    assert ndcg_at(["z", "a"], {"a": 1, "z": 0}) == pytest.approx(1 / math.log2(3))
    # Only the top k of the ideal ranking count: 12 relevant docs, 10 retrieved → perfect at 10.
    rel = {f"d{i}": 1 for i in range(12)}
    assert ndcg_at([f"d{i}" for i in range(10)], rel, k=10) == pytest.approx(1.0)


def test_recall_by_hand():
    assert recall_at(["a", "x", "b"], {"a": 1, "b": 1, "c": 1, "z": 0}, k=2) == pytest.approx(1 / 3)
    assert recall_at(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, k=3) == pytest.approx(2 / 3)
    assert recall_at(["a", "b"], {"a": 1, "b": 2}) == 1.0
    assert recall_at(["a"], {"z": 0}) == 0.0
    assert recall_at([], {}) == 0.0
    assert recall_at(["a", "a", "a"], {"a": 1, "b": 1}) == 0.5


def test_mrr_by_hand():
    assert mrr_at(["a"], {"a": 1}) == 1.0
    assert mrr_at(["x", "y", "a"], {"a": 1}) == pytest.approx(1 / 3)
    assert mrr_at(["x", "y", "a"], {"a": 1}, k=2) == 0.0
    assert mrr_at(["x", "a", "b"], {"x": 0, "a": 1, "b": 2}) == 0.5
    assert mrr_at([], {"a": 1}) == 0.0


def test_load_qrels_skips_header(tmp_path):
    path = tmp_path / "qrels.tsv"
    path.write_text("query-id\tcorpus-id\tscore\n1\t10\t1\n1\t11\t2\n2\t10\t0\n\nbad line\n", encoding="utf-8")
    assert load_qrels(path) == {"1": {"10": 1, "11": 2}, "2": {"10": 0}}
