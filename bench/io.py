"""Vault I/O: import, re-import and export of a 10k-note markdown vault, MCP write → app, folder watch.

Run:  .venv/bin/python bench/io.py [--notes N]
Progress goes to stderr; the last line of stdout is one JSON object (also saved as bench/results/io.json).

- vault_import_s: `cairn import` (core.vault.sync.import_vault, no embedding) of a generated vault of N
  notes into an empty database. The vault is made with a fixed seed: pseudo-word titles in a few
  folders (some nested), frontmatter on most notes (tags, aliases on some, a title differing from the
  file name on some, a date, a property wikilink now and then), `#`/`##` headings, paragraphs, 3–8
  wikilinks each (by file name, `|alias`, `#Heading`, `![[embed]]` of notes and of images, by alias,
  by title, by folder path, a few dangling), inline #tags and some fenced code.
- reimport_unchanged_s: the same import again, nothing changed (a new VaultSync: every file is read
  and hashed, nothing written).
- export_s: core.vault.export.export of that database into an empty folder.
- mcp_create_to_visible_ms: a `createNode` through the real `cairn mcp` stdio subprocess (mcp SDK
  client), until the Cairn app running headless in this process (Textual run_test) lists the new node
  in its Nodes browser (`#node-list` has an option whose id is the node id). The app notices the other
  process's commit by watching the DB's WAL (tui/app.py watch_database, debounce 150 ms). Median of
  MCP_RUNS creations, on the imported database. mcp_call_ms: the createNode round trip alone.
- watch_latency_ms: core.vault.watch's watcher (start_watching: its own thread and DB connection) on the
  imported vault; a note's file is rewritten (one write, plus a new wikilink) and the database polled
  every 2 ms until the node holds the new text. Median of WATCH_RUNS edits (after one warm-up).
  watchfiles hands a batch over once no new event came for one `step` (50 ms in core.vault.watch; its
  1.6 s `debounce` only caps a stream of changes), so ~50-100 ms of it is waiting by design.
  watch_process_ms: the time inside the watcher's sync for that change (VaultSync.sync, timed here:
  look at the file, parse it, write the node, reconcile its edges, make the report). watch_first_sync_s: the
  watcher's start-up sync of the whole folder (a new VaultSync: every file read and hashed).

The app's copy of the database has the imported nodes marked indexed (see main()), and nothing here
embeds anything: import and export are the file and database work alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEED = 20240917
MCP_RUNS = 7
WATCH_RUNS = 9

_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


# -- the vault ---------------------------------------------------------------------------------------
_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
           "br", "ch", "cl", "dr", "fl", "gr", "kr", "pl", "pr", "sh", "sk", "sl", "sp", "st", "th", "tr"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou"]
_CODAS = ["", "", "", "n", "l", "r", "m", "nd", "st", "x"]
_STOP = ("the a an of to in and or for with on at by from as is was are be this that it not but which "
         "we they you he she into over under about after before than then so if when while").split()
FOLDERS = ["", "", "", "projects", "projects/active", "projects/archive", "people", "reading", "journal",
           "ideas", "areas/health", "areas/work"]


def _words(rng: random.Random, size: int) -> list[str]:
    seen: set[str] = set(_STOP)
    out: list[str] = []
    while len(out) < size:
        w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.randint(2, 4))) + rng.choice(_CODAS)
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def _sentence(rng: random.Random, vocab: list[str]) -> str:
    n = rng.randint(6, 20)
    ws = [rng.choice(_STOP) if rng.random() < 0.4 else vocab[min(int(rng.paretovariate(1.1)) - 1, len(vocab) - 1)
                                                               if rng.random() < 0.5 else rng.randrange(len(vocab))]
          for _ in range(n)]
    return " ".join([ws[0].capitalize(), *ws[1:]]) + "."


def make_vault(folder: Path, n: int, seed: int = SEED) -> dict:
    """Write n notes into `folder`; returns facts about them (paths, titles, links written)."""
    rng = random.Random(seed)
    vocab = _words(rng, 6_000)
    tags = [f"{w}" for w in vocab[:60]] + [f"area/{w}" for w in vocab[60:70]]
    titles: list[str] = []
    used: set[str] = set()
    while len(titles) < n:
        t = " ".join(w.capitalize() if i == 0 else w for i, w in enumerate(rng.sample(vocab[:3000], rng.randint(1, 4))))
        if t.lower() not in used:
            used.add(t.lower())
            titles.append(t)
    paths = [(rng.choice(FOLDERS) + "/" if rng.random() < 0.7 else "") + t + ".md" for t in titles]
    paths = [p.lstrip("/") for p in paths]
    # Some notes have a frontmatter title differing from their file name; some have aliases.
    display = [f"{t} notes" if rng.random() < 0.05 else t for t in titles]
    aliases = [[f"{rng.choice(vocab[3000:])} {rng.choice(vocab[3000:])}" for _ in range(rng.randint(1, 2))]
               if rng.random() < 0.2 else [] for _ in range(n)]
    headings = [[_sentence(rng, vocab).split(".")[0][:40].strip() for _ in range(rng.randint(1, 4))] for _ in range(n)]
    links_written = 0
    for i in range(n):
        parts: list[str] = []
        if rng.random() < 0.75:
            fm = ["---"]
            if display[i] != titles[i]:
                fm.append(f"title: {display[i]}")
            if rng.random() < 0.8:
                fm.append("tags: [" + ", ".join(rng.sample(tags, rng.randint(1, 4))) + "]")
            if aliases[i]:
                fm.append("aliases:\n" + "\n".join(f"  - {a}" for a in aliases[i]))
            if rng.random() < 0.5:
                fm.append(f"date: 2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
            if rng.random() < 0.1:
                fm.append(f'related: "[[{titles[rng.randrange(n)]}]]"')
                links_written += 1
            if rng.random() < 0.2:
                fm.append(f"status: {rng.choice(['draft', 'done', 'seed', 'evergreen'])}")
            fm.append("---")
            parts.append("\n".join(fm))
        parts.append(f"# {display[i]}")
        k = rng.randint(3, 8)
        links = []
        for _ in range(k):
            j = rng.randrange(n)
            r = rng.random()
            if r < 0.40:
                links.append(f"[[{titles[j]}]]")
            elif r < 0.55:
                links.append(f"[[{titles[j]}|{rng.choice(vocab)}]]")
            elif r < 0.65:
                links.append(f"[[{titles[j]}#{rng.choice(headings[j])}]]")
            elif r < 0.72:
                links.append(f"![[{titles[j]}]]")
            elif r < 0.76:
                links.append(f"![[{rng.choice(vocab)}-{rng.randint(1, 99)}.png]]")
            elif r < 0.83:  # by alias (when it has one)
                links.append(f"[[{aliases[j][0] if aliases[j] else titles[j]}]]")
            elif r < 0.88:  # by the frontmatter title (when it differs from the file name)
                links.append(f"[[{display[j]}]]")
            elif r < 0.92:  # by folder path
                links.append(f"[[{paths[j][:-3]}]]")
            elif r < 0.95:
                links.append(f"[[{rng.choice(vocab).capitalize()} {rng.choice(vocab)}]]")  # not (yet) written
            else:
                links.append(f"[[{titles[j]}]]")
        links_written += k
        body_heads = headings[i]
        li = 0
        for h, head in enumerate(body_heads):
            parts.append(f"## {head}")
            for _ in range(rng.randint(1, 3)):
                sents = [_sentence(rng, vocab) for _ in range(rng.randint(2, 6))]
                while li < len(links) and rng.random() < 0.6:
                    sents.insert(rng.randrange(len(sents) + 1), f"See {links[li]}.")
                    li += 1
                if rng.random() < 0.3:
                    sents.append(f"#{rng.choice(tags)}")
                parts.append(" ".join(sents))
            if rng.random() < 0.08:
                parts.append(f"```python\nx = '#{rng.choice(vocab)} [[not a link]]'\n```")
        if li < len(links):
            parts.append("Related: " + ", ".join(links[li:]))
        if rng.random() < 0.3:
            parts.append("- [ ] " + _sentence(rng, vocab) + "\n- [x] " + _sentence(rng, vocab))
        path = folder / paths[i]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    (folder / ".obsidian").mkdir(exist_ok=True)
    (folder / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    return {"paths": paths, "titles": titles, "links_written": links_written}


# -- the parts ---------------------------------------------------------------------------------------
def bench_import(store, vault: Path) -> dict:
    from core.vault.sync import import_vault

    t0 = time.perf_counter()
    report = import_vault(store, vault)
    first = time.perf_counter() - t0
    log(f"  imported {report.files:,} notes in {first:.1f} s; re-importing")
    t0 = time.perf_counter()
    again = import_vault(store, vault)
    second = time.perf_counter() - t0
    assert again.created == again.updated == again.edges_created == again.edges_removed == 0, again.as_dict()
    return {"vault_import_s": round(first, 2), "reimport_unchanged_s": round(second, 2),
            "notes": report.files, "links": report.wikilinks + report.md_links,
            "links_resolved": report.wikilinks_resolved + report.md_links_resolved,
            "same_note_links": report.same_note_links, "unresolved": len(report.unresolved),
            "attachment_links": len(report.attachments), "edges": report.edges,
            "edges_in_db": store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]}


def bench_export(store, folder: Path) -> dict:
    from core.vault.export import export

    t0 = time.perf_counter()
    report = export(store, folder)
    seconds = time.perf_counter() - t0
    return {"export_s": round(seconds, 2), "exported_nodes": report.written, "exported_edges": report.edges,
            "export_mb": round(sum(p.stat().st_size for p in folder.rglob("*.md")) / 1e6, 1)}


def bench_watch(db: Path, vault: Path, paths: list[str]) -> dict:
    """Edit WATCH_RUNS notes, one at a time, under a running watcher; time each until the DB has it."""
    from core.graph.store import Store
    from core.vault.sync import VaultSync
    from core.vault.watch import start_watching

    # Time each sync to the microsecond (SyncReport.seconds is rounded to the millisecond).
    plain_sync = VaultSync.sync

    def timed_sync(self, *args, **kwargs):
        t = time.perf_counter()
        report = plain_sync(self, *args, **kwargs)
        report.bench_ms = (time.perf_counter() - t) * 1000
        return report

    VaultSync.sync = timed_sync
    ready = threading.Event()
    reports: list = []
    errors: list = []
    t0 = time.perf_counter()
    watcher = start_watching(db, vault, on_ready=lambda r: ready.set(), on_change=reports.append,
                             on_error=errors.append)
    if not ready.wait(300):
        raise SystemExit(f"the watcher's initial sync did not finish: {watcher.error!r}")
    start_s = time.perf_counter() - t0
    log(f"  watcher ready after {start_s:.1f} s (its first sync of the folder); editing")
    rng = random.Random(SEED + 1)
    latencies, process, misses = [], [], 0
    try:
        time.sleep(1.0)  # let watchfiles' inotify watches settle
        with Store(db, readonly=True) as reader:
            for i, rel in enumerate(rng.sample(paths, WATCH_RUNS + 1)):
                node_id = reader.db.execute("SELECT id FROM nodes WHERE json_extract(metadata, '$.vault.path') = ?",
                                            (rel,)).fetchone()[0]
                marker = f"edited-{i}-{rng.randrange(10**9)}"
                path = vault / rel
                text = path.read_text(encoding="utf-8") + f"\nAn edit: {marker} and [[{rng.choice(paths)[:-3]}]].\n"
                seen = len(reports)
                t = time.perf_counter()
                path.write_text(text, encoding="utf-8")  # one write, as an editor's save in place
                deadline = t + 20
                while True:
                    source = reader.db.execute("SELECT source FROM nodes WHERE id = ?", (node_id,)).fetchone()[0]
                    if marker in source:
                        break
                    if time.perf_counter() > deadline:
                        raise SystemExit(f"the watcher did not update {rel}: {errors or watcher.error!r}")
                    time.sleep(0.002)
                elapsed = (time.perf_counter() - t) * 1000
                time.sleep(0.3)  # its on_change report has landed; quiet before the next edit
                mine = [r for r in reports[seen:] if rel in r.changed]
                if i == 0:
                    continue  # warm-up
                latencies.append(elapsed)
                if mine:
                    process.append(mine[0].bench_ms)
                else:
                    misses += 1
    finally:
        watcher.stop()
        VaultSync.sync = plain_sync
    if errors:
        raise SystemExit(f"watcher errors: {errors!r}")
    return {"watch_latency_ms": round(statistics.median(latencies), 1),
            "watch_latency_runs_ms": [round(x, 1) for x in latencies],
            "watch_process_ms": round(statistics.median(process), 2) if process else None,
            "watch_process_runs_ms": [round(x, 2) for x in process],
            "watch_process_unmatched": misses,
            "watch_first_sync_s": round(start_s, 2)}


async def bench_mcp_to_app(db: Path, env: dict) -> dict:
    """createNode over a real `cairn mcp` subprocess; the in-process app must list the node."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tui.app import CairnApp
    from tui.widgets.node_browser import NodeBrowser

    script = Path(sys.executable).parent / "cairn"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--db", str(db)],
                                   env={"CAIRN_HOME": env["CAIRN_HOME"], "HOME": env["HOME"]}, cwd=str(ROOT))
    samples, calls = [], []
    errlog = open(Path(env["HOME"]) / "mcp-stderr.log", "w")
    try:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                app = CairnApp(db, first_run_prompt=False)
                async with app.run_test(size=(160, 48)):
                    browser = app.query_one(NodeBrowser)
                    node_list = browser.query_one("#node-list")

                    async def until(predicate, timeout=30.0):
                        deadline = time.perf_counter() + timeout
                        while not predicate():
                            if time.perf_counter() > deadline:
                                raise TimeoutError("the app did not show the node in time")
                            await asyncio.sleep(0.005)

                    def listed(node_id: int) -> bool:
                        try:
                            node_list.get_option(str(node_id))
                            return True
                        except Exception:  # OptionDoesNotExist
                            return False

                    await until(lambda: browser._shown is not None)
                    log("  app up, list shown; creating nodes over MCP")
                    for i in range(MCP_RUNS + 1):
                        await asyncio.sleep(1.0)  # quiet: the app's last reload and indexing are done
                        t0 = time.perf_counter()
                        result = await session.call_tool("createNode", {
                            "title": f"Bench node {i}", "source": f"Created over MCP by bench/io.py, run {i}.",
                            "dimensions": ["bench"]})
                        called = time.perf_counter()
                        if result.is_error:
                            raise SystemExit(f"createNode failed: {result.content[0].text}")
                        node_id = json.loads(result.content[0].text)["created"]["id"]
                        await until(lambda: listed(node_id))
                        done = time.perf_counter()
                        if i == 0:
                            continue  # warm-up: the app's indexer loads the embedder on the first new node
                        samples.append((done - t0) * 1000)
                        calls.append((called - t0) * 1000)
    finally:
        errlog.close()
    return {"mcp_create_to_visible_ms": round(statistics.median(samples), 1),
            "mcp_create_to_visible_runs_ms": [round(x, 1) for x in samples],
            "mcp_call_ms": round(statistics.median(calls), 1)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=10_000)
    args = parser.parse_args()
    started = time.perf_counter()
    result: dict = {"bench": "io"}
    with tempfile.TemporaryDirectory(prefix="cairn-bench-io-") as tmp:
        tmp = Path(tmp)
        env = dict(os.environ, CAIRN_HOME=str(tmp / "home"), HOME=str(tmp))
        os.environ.update(CAIRN_HOME=env["CAIRN_HOME"], HOME=env["HOME"])
        from core.graph.store import Store

        vault = tmp / "vault"
        vault.mkdir()
        log(f"writing a {args.notes:,}-note vault")
        facts = make_vault(vault, args.notes)
        result["vault_mb"] = round(sum(p.stat().st_size for p in vault.rglob("*.md")) / 1e6, 1)
        result["links_written"] = facts["links_written"]
        db = tmp / "home" / "cairn.db"
        with Store(db) as store:
            log("import")
            result.update(bench_import(store, vault))
            log("export")
            result.update(bench_export(store, tmp / "export"))
            store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.rmtree(tmp / "export")
        # The app indexes pending nodes when it starts; 10k just-imported notes would keep a core busy
        # embedding through the whole measurement. Its copy of the DB has them marked done (no chunks:
        # the browser lists nodes all the same); the nodes made over MCP are indexed as usual.
        app_db = tmp / "app" / "cairn.db"
        app_db.parent.mkdir()
        shutil.copy(db, app_db)
        with Store(app_db) as store:
            store.db.execute("UPDATE nodes SET chunk_status = 'indexed' WHERE chunk_status != 'indexed'")
            store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        log("watch")
        result.update(bench_watch(db, vault, facts["paths"]))
        log("MCP createNode → the app's Nodes browser")
        result.update(asyncio.run(bench_mcp_to_app(app_db, env)))
    result["targets"] = {"watch_process_ms<100": result["watch_process_ms"] is not None
                         and result["watch_process_ms"] < 100}
    result["total_s"] = round(time.perf_counter() - started, 1)
    line = json.dumps(result)
    out = ROOT / "bench" / "results" / "io.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
