"""RA-H OS files made and migrated by RA-H's own code, imported with Cairn (issue 24, item 6).

Usage: .venv/bin/python bench/raha_real.py [--mirror GIT_DIR] [--work DIR] [--keep]

Nothing of RA-H is committed here. At run time this tool:

1. `git archive`s three commits of RA-H OS from a local mirror (default: the fetched
   CleverPeopleOnly/ra-h_os mirror, a fork that carries bradwmorris/ra-h_os's history up to May 2026):
   - dec2025 e15f223 (2025-12-25, "sync: Drag-to-chat + views system"): the schema script
     scripts/database/sqlite-ensure-app-schema.sh, the node and edge API routes and services
     (content = summary, chunk = full text, chunks rows by its UniversalEmbedder: LangChain's
     RecursiveCharacterTextSplitter, 1000 characters with 200 of overlap), the trigger that stamps both
     ends of a new edge with one updated_at;
   - feb2026 86f43c9 (2026-02-15, "final schema pass"): the SQLiteClient migration (content renamed
     notes, event_date backfilled from metadata.published_date, type dropped) and that release's node route;
   - may2026 70e95e7 (2026-05-02, the newest upstream commit): the SQLiteClient migration that adds
     `nodes.source` and fills it from content/notes before chunk (so an upgraded node's source is its
     summary), moves dimensions into dimension_migration_snapshots and drops their tables; and its hub
     query (autoContext.ts: ORDER BY edge_count DESC, n.updated_at DESC, n.id ASC).
2. `npm install`s, into each tree, the versions that commit's package-lock.json pins of the few packages
   the code needs to run (better-sqlite3, @langchain/textsplitters, @langchain/core, zod, esbuild).
   Model providers are stubbed at bundle time (`openai` returns deterministic vectors, `ai`'s
   generateText fails as it does without a key, so RA-H keeps its no-model fallbacks); `next/server`
   is a two-line shim so RA-H's route handlers run outside Next. Everything else is RA-H's own code,
   bundled with esbuild through RA-H's own tsconfig paths and run with node.
3. Builds four files: dec2025 (December code), feb2026 (that file opened by February's code, plus two
   nodes made by February's route), may2026 (the February file opened by May's code) and
   may2026_from_dec (the December file opened by May's code directly, a user who skipped February).
4. Imports each into a fresh Cairn database (`cairn import FILE --json --no-index`) and checks every node
   against the file (texts, chunks rows, warnings, dates, hubs); then re-imports the may2026 file over a
   database that Cairn's previous RA-H importer (the revision before d01f99b, from this repository's
   history) filled, to count the short nodes the re-import fixes.

The last line printed is one JSON object, also saved to bench/results/raha_real.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_MIRROR = Path("/work/.mirror/CleverPeopleOnly+ra-h_os/repo")
COMMITS = {
    "dec2025": "e15f223ed841a32db5a014f68c34a9b73f36b0be",
    "feb2026": "86f43c997595781d232594f183dc4ff138de89cb",
    "may2026": "70e95e7d29b3999d5c4e6a4222a115c8f9cca38a",
}
# Cairn's RA-H importer before it read chunk / chunks rows beside source (for the re-import check).
CAIRN_FIX_COMMIT = "d01f99b"
NPM_PACKAGES = ("better-sqlite3", "@langchain/textsplitters", "@langchain/core", "zod", "esbuild")
# sqlite-vec: RA-H vendors only a macOS vec0.dylib and its README sends Linux/Windows users to sqlite-vec's
# releases (0.1.6 named there); RA-H's December code fails without the vec0 module, so it is installed too.
SQLITE_VEC = "0.1.6"
RESULTS = ROOT / "bench" / "results" / "raha_real.json"


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def run(cmd, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("check", True)
    return subprocess.run(cmd, **kw)


# ---------------------------------------------------------------------------------------------------
# RA-H trees and their npm packages

def git(mirror: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return run(["git", f"--git-dir={mirror}", *args], capture_output=True, **kw)


def archive(mirror: Path, commit: str, dest: Path) -> None:
    """The commit's app/, src/, scripts/ and tsconfig.json in `dest` (not its package.json: only the
    few packages the code needs are installed, at the versions its lock file pins)."""
    dest.mkdir(parents=True, exist_ok=True)
    data = git(mirror, "archive", "--format=tar", commit, "app", "src", "scripts", "tsconfig.json").stdout
    run(["tar", "-x", "-C", str(dest)], input=data)


def pinned_versions(mirror: Path, commit: str) -> dict[str, str]:
    lock = json.loads(git(mirror, "show", f"{commit}:package-lock.json").stdout)
    packages = lock.get("packages", {})
    out = {}
    for name in NPM_PACKAGES:
        version = packages.get(f"node_modules/{name}", {}).get("version")
        if not version:
            raise SystemExit(f"{commit}'s package-lock.json pins no {name}")
        out[name] = version
    return out


def npm_install(versions: dict[str, str], cache: Path) -> Path:
    """node_modules with exactly these versions (shared between trees that pin the same ones)."""
    versions = dict(versions, **{"sqlite-vec": SQLITE_VEC})
    key = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:12]
    home = cache / f"npm-{key}"
    if (home / "node_modules" / "better-sqlite3" / "build" / "Release" / "better_sqlite3.node").is_file():
        return home / "node_modules"
    home.mkdir(parents=True, exist_ok=True)
    (home / "package.json").write_text(json.dumps({"name": "raha-real-bench", "private": True}))
    specs = [f"{n}@{v}" for n, v in versions.items()]
    log(f"npm install {' '.join(specs)}")
    # --legacy-peer-deps: RA-H's own lock holds @langchain/textsplitters 0.1.0 beside @langchain/core 1.0.1,
    # outside the former's declared peer range; npm resolved it that way for RA-H too.
    run(["npm", "install", "--no-audit", "--no-fund", "--legacy-peer-deps", "--foreground-scripts", *specs],
        cwd=home, capture_output=True)
    return home / "node_modules"


def vec0_path(node_modules: Path) -> Path:
    found = sorted(node_modules.glob("sqlite-vec-*/vec0.*"))
    if not found:
        raise SystemExit(f"no vec0 library under {node_modules} (npm package sqlite-vec {SQLITE_VEC})")
    return found[0]


STUBS = {
    # The embedding API: a deterministic unit-ish vector per text (RA-H only stores it).
    "openai.js": r"""
function vec(t) {
  const v = new Array(1536); let h = 2166136261 >>> 0;
  for (let i = 0; i < t.length; i++) { h ^= t.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
  for (let i = 0; i < 1536; i++) { h ^= h << 13; h >>>= 0; h ^= h >>> 17; h ^= h << 5; h >>>= 0; v[i] = h / 4294967296 - 0.5; }
  return v;
}
class OpenAI {
  constructor() {
    this.embeddings = { create: async ({ input }) => ({ data: (Array.isArray(input) ? input : [input]).map((t, index) => ({ index, embedding: vec(String(t)) })) }) };
    this.chat = { completions: { create: async () => { throw new Error('bench: no chat model'); } } };
  }
}
module.exports = OpenAI; module.exports.default = OpenAI; module.exports.OpenAI = OpenAI;
""",
    # Text generation fails, as without an API key: RA-H keeps its fallbacks (no AI dimensions, the
    # default description "Website content from <host>", ...).
    "ai.js": r"""
const fail = async () => { throw new Error('bench: no language model'); };
module.exports = { generateText: fail, generateObject: fail, streamText: fail, embed: fail, embedMany: fail,
  tool: (x) => x, jsonSchema: (x) => x, stepCountIs: () => () => false };
""",
    "ai-sdk-openai.js": r"""
const model = (id) => ({ modelId: id, provider: 'openai' });
module.exports = { openai: model, createOpenAI: () => model };
""",
    "next-server.js": r"""
class NextResponse { static json(body, init) { return { status: (init && init.status) || 200, body }; } }
module.exports = { NextResponse, NextRequest: class {} };
""",
}

# Driver: runs RA-H's own modules of one commit. argv: plan.json; env SQLITE_DB_PATH.
DRIVER = r"""
import fs from 'fs';
import { getSQLiteClient } from '@/services/database/sqlite-client';
__IMPORTS__

const plan = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const refs: Record<string, number> = {};
const out: any = { created: {}, edges: 0, errors: [] };
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

async function waitForEmbedding() {
  const db = getSQLiteClient();
  for (let i = 0; i < 600; i++) {
    const row: any = db.prepare("SELECT COUNT(*) AS c FROM nodes WHERE chunk IS NOT NULL AND LENGTH(TRIM(chunk)) > 0 AND COALESCE(chunk_status, '') NOT IN ('chunked', 'error')").get();
    if (row.c === 0) return;
    await sleep(100);
  }
  out.errors.push('embedding queue did not drain');
}

async function main() {
  const db = getSQLiteClient();  // RA-H's constructor: its schema checks and migrations for this release
  for (const step of plan.steps) {
    if (step.kind === 'node') {
      const body = { ...step.body };
      const res: any = await POST_NODE(new Request('http://localhost/api/nodes', { method: 'POST', body: JSON.stringify(body) }) as any);
      if (res.status >= 300 || !res.body?.data?.id) { out.errors.push(`node ${step.ref}: ${JSON.stringify(res.body)}`); continue; }
      refs[step.ref] = res.body.data.id; out.created[step.ref] = res.body.data.id;
    } else if (step.kind === 'service_node') {
      const node: any = await nodeService.createNode(step.data);
      refs[step.ref] = node.id; out.created[step.ref] = node.id;
    } else if (step.kind === 'wait') {
      await waitForEmbedding();
    } else if (step.kind === 'edge') {
      const body = { ...step.body, from_node_id: refs[step.from], to_node_id: refs[step.to] };
      const res: any = await POST_EDGE(new Request('http://localhost/api/edges', { method: 'POST', body: JSON.stringify(body) }) as any);
      if (res.status >= 300) out.errors.push(`edge ${step.from}->${step.to}: ${JSON.stringify(res.body)}`); else out.edges += 1;
      await sleep(3);
    } else if (step.kind === 'hubs') {
      out.hubs = getHubNodes(step.limit || 50).map((h: any) => ({ id: h.id, title: h.title, edge_count: h.edgeCount, updated_at: h.updatedAt }));
    }
  }
  db.close();
  fs.writeFileSync(plan.out, JSON.stringify(out, null, 1));
  process.exit(0);
}
main().catch(e => { console.error(e); process.exit(1); });
"""

DRIVER_IMPORTS = {
    "routes": """
import { POST as POST_NODE } from '@/app/api/nodes/route';
import { POST as POST_EDGE } from '@/app/api/edges/route';
import { nodeService } from '@/services/database/nodes';
const getHubNodes = (_: number) => [];
""",
    "migrate": """
const POST_NODE: any = null, POST_EDGE: any = null, nodeService: any = null;
const getHubNodes = (_: number) => [];
""",
    "hubs": """
import { getHubNodes } from '@/services/context/autoContext';
const POST_NODE: any = null, POST_EDGE: any = null, nodeService: any = null;
""",
}


def bundle(tree: Path, stubs: Path, node_modules: Path, kind: str) -> Path:
    link = tree / "node_modules"
    if not link.exists():
        link.symlink_to(node_modules)
    source = tree / f"bench_driver_{kind}.ts"
    source.write_text(DRIVER.replace("__IMPORTS__", DRIVER_IMPORTS[kind]))
    out = tree / "out" / f"driver_{kind}.js"
    aliases = {"openai": "openai.js", "ai": "ai.js", "@ai-sdk/openai": "ai-sdk-openai.js",
               "next/server": "next-server.js"}
    cmd = [str(node_modules / ".bin" / "esbuild"), source.name, "--bundle", "--platform=node", "--format=cjs",
           "--target=node20", f"--outfile={out}", "--tsconfig=tsconfig.json", "--log-level=error",
           "--external:better-sqlite3", "--external:sqlite-vec", "--external:@qdrant/*"]
    cmd += [f"--alias:{name}={stubs / file}" for name, file in aliases.items()]
    # RA-H's tsconfig maps "@/*" to "./*" (and @/services/* to ./src/services/*), which esbuild follows.
    run(cmd, cwd=tree, capture_output=True)
    return out


def run_driver(driver: Path, tree: Path, db: Path, plan: dict, work: Path, name: str) -> dict:
    plan = dict(plan, out=str(work / f"{name}.out.json"))
    plan_path = work / f"{name}.plan.json"
    plan_path.write_text(json.dumps(plan))
    env = dict(os.environ, SQLITE_DB_PATH=str(db), OPENAI_API_KEY="bench-stub",
               SQLITE_VEC_EXTENSION_PATH=str(vec0_path(tree / "node_modules")), NODE_ENV="production",
               DISABLE_EMBEDDINGS="false", HOME=str(work / "home"))
    (work / "home").mkdir(exist_ok=True)
    # Loaded by require from -e: RA-H modules that run a CLI `if (require.main === module)` (embed-universal)
    # must not take the bundle for their own main module.
    proc = subprocess.run(["node", "-e", "require(process.argv[1])", str(driver), str(plan_path)], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=900)
    (work / f"{name}.node.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"RA-H driver {name} failed (see {work / (name + '.node.log')}):\n{proc.stderr[-3000:]}")
    return json.loads((work / f"{name}.out.json").read_text())


# ---------------------------------------------------------------------------------------------------
# What RA-H is given: long texts (split by RA-H into chunks rows), summaries, dates as its extractors write

WORDS = ("attention memory graph note link source summary chunk index vector query answer paper author "
         "method result table figure claim evidence reader writer idea card drawer box archive river "
         "stone field light signal noise model token window layer weight train test focus habit").split()


def prose(rng: random.Random, chars: int, *, paragraphs: bool = True, lines: bool = False) -> str:
    out, size = [], 0
    while size < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 22))).capitalize() + "."
        if rng.random() < 0.1:
            sentence += " Café naïve — “quoted” 🙂."
        out.append(sentence)
        size += len(sentence) + 1
        if paragraphs and rng.random() < 0.12:
            out.append("\n\n")
        elif lines and rng.random() < 0.2:
            out.append("\n")
    text = ""
    for piece in out:
        text += piece if piece.startswith("\n") or not text or text.endswith("\n") else " " + piece
    return text.strip()


# (ref, RA-H metadata.published_date, what Cairn should keep: a date, or None = kept raw and warned)
DATES = {
    "web": ("Mon, 25 Nov 2024 10:00:00 GMT", "2024-11-25"),
    "paper": ("2017-06-12", "2017-06-12"),
    "talk": ("2024-08-01T23:30:00-05:00", "2024-08-01"),
    "post": ("March 3, 2025", "2025-03-03"),
    "rss": ("Tue, 4 Feb 2025 18:05:00 +0100", "2025-02-04"),
    "ambiguous": ("03/04/2024", None),
    "video": ("20240115", "2024-01-15"),
}


def dec_plan(seed: int = 24) -> tuple[dict, dict]:
    """Steps for December's code, and the full texts given (ref -> text)."""
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    steps: list[dict] = []

    def node(ref, title, *, content=None, chunk=None, link=None, date_ref=None, dims=()):
        meta = {"source": "website" if link else "note"}
        if date_ref:
            meta["published_date"] = DATES[date_ref][0]
        if link:
            meta["hostname"] = re.sub(r"^https?://([^/]+).*$", r"\1", link)
        body = {"title": title, "content": content, "chunk": chunk, "link": link, "dimensions": list(dims),
                "metadata": meta}
        steps.append({"kind": "node", "ref": ref, "body": {k: v for k, v in body.items() if v is not None}})
        texts[ref] = chunk if chunk is not None else (content or "")

    # Extracted pages: RA-H's websiteExtract without a model gives content "Website content from <host>"
    # and the page text as chunk (the 24-characters-against-10,829 shape of the issue).
    node("web", "Deep work, a long page", content="Website content from example.org",
         chunk=prose(rng, 10829), link="https://example.org/deep-work", date_ref="web", dims=("research",))
    node("paper", "Attention is all you need", content="Paper: the transformer, attention only.",
         chunk=prose(rng, 24000, lines=True), link="https://arxiv.org/abs/1706.03762", date_ref="paper",
         dims=("research", "papers"))
    node("video", "A talk transcript", content="Transcript of a talk on note-taking.",
         chunk=prose(rng, 8000, paragraphs=False), link="https://www.youtube.com/watch?v=abc", date_ref="video")
    node("talk", "Conference keynote", content="Website content from conf.example.net",
         chunk=prose(rng, 5200), link="https://conf.example.net/keynote", date_ref="talk")
    node("rss", "Weekly letter", content="Website content from letters.example.com",
         chunk=prose(rng, 3100), link="https://letters.example.com/p/1", date_ref="rss")
    node("ambiguous", "A page with a slashed date", content="Website content from slash.example",
         chunk=prose(rng, 2500), link="https://slash.example/a", date_ref="ambiguous")
    # A note long enough that the route copies content into chunk (AUTO_EMBED_MIN_CHARS = 200).
    node("long_note", "Long note", content=prose(rng, 1800), date_ref="post", dims=("ideas",))
    # A short note: no chunk, no chunks rows.
    node("short_note", "Short note", content="Ninety-minute blocks, phone in another room.", dims=("ideas",))
    # Notes written beside a short excerpt: content (the user's notes) longer than chunk.
    node("notes_longer", "Excerpt with long notes", content=prose(rng, 2600), chunk=prose(rng, 400))
    # No separators at all for a long stretch: the splitter falls back to characters.
    node("unbroken", "A long unbroken string", content="A hash dump.",
         chunk="x" * 50 + "".join(rng.choice("abcdef0123456789") for _ in range(3400)))
    steps.append({"kind": "service_node", "ref": "memory", "data": {
        "title": "User prefers mornings", "content": "Observed across chats.", "type": "memory",
        "metadata": {}, "dimensions": ["memory"]}})
    texts["memory"] = "Observed across chats."
    steps.append({"kind": "wait"})
    # Edges by the edge route. The last edge of a pair stamps both ends with one updated_at (RA-H's
    # trigger), so nodes with equal edge counts tie on updated_at: RA-H's hub query then orders by id.
    for a, b, why in (("web", "paper", "Both on attention"), ("web", "long_note", "Notes on the page"),
                      ("paper", "talk", "The keynote cites the paper"), ("web", "video", "Same author"),
                      ("memory", "web", "Memory about the page"), ("memory", "paper", "Memory about the paper"),
                      ("rss", "ambiguous", "Same week"), ("short_note", "notes_longer", "Same project"),
                      ("unbroken", "video", "")):
        steps.append({"kind": "edge", "from": a, "to": b, "body": {
            "source": "user", "context": {"explanation": why, "type": "related", "created_via": "ui"}}})
    return {"steps": steps}, texts


def feb_plan(seed: int = 25) -> tuple[dict, dict]:
    rng = random.Random(seed)
    texts = {"feb_page": prose(rng, 6400), "feb_note": "A short February note."}
    steps = [
        {"kind": "node", "ref": "feb_page", "body": {
            "title": "February page", "notes": "Website content from feb.example", "chunk": texts["feb_page"],
            "link": "https://feb.example/x", "metadata": {"published_date": "Wed, 11 Feb 2026 07:00:00 GMT"}}},
        {"kind": "node", "ref": "feb_note", "body": {"title": "February note", "notes": texts["feb_note"]}},
        {"kind": "wait"},
    ]
    return {"steps": steps}, texts


# ---------------------------------------------------------------------------------------------------
# Reading an RA-H file and the Cairn database made from it

def file_nodes(path: Path) -> dict[int, dict]:
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    c.row_factory = sqlite3.Row
    cols = {r[1] for r in c.execute("PRAGMA table_info(nodes)")}
    out = {}
    for row in c.execute("SELECT * FROM nodes ORDER BY id"):
        d = {k: row[k] for k in ("id", "title", "source", "chunk", "content", "notes", "description", "type",
                                 "metadata", "event_date", "updated_at") if k in cols}
        out[row["id"]] = d
    chunk_rows: dict[int, list[str]] = {}
    tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "chunks" in tables:
        for node_id, text in c.execute("SELECT node_id, text FROM chunks ORDER BY node_id, chunk_idx, id"):
            chunk_rows.setdefault(node_id, []).append(text or "")
    for nid, d in out.items():
        d["chunk_rows"] = chunk_rows.get(nid, [])
    c.close()
    return out


def squash(text: str | None) -> str:
    return " ".join((text or "").split())


def bare(text: str | None) -> str:
    return "".join((text or "").split())


def raha_hubs_sql(path: Path) -> list[dict]:
    """RA-H's newest hub query (autoContext.ts at 70e95e7) on any era's file; memory (the type column,
    or metadata.type) and nodes without edges left out as Cairn leaves them out."""
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    cols = {r[1] for r in c.execute("PRAGMA table_info(nodes)")}
    rows = c.execute("""SELECT n.id, n.title, COUNT(DISTINCT e.id) AS edge_count, n.updated_at
                          FROM nodes n LEFT JOIN edges e ON (e.from_node_id = n.id OR e.to_node_id = n.id)
                         GROUP BY n.id ORDER BY edge_count DESC, n.updated_at DESC, n.id ASC LIMIT 50""").fetchall()
    kinds = {}
    if "type" in cols:
        kinds = dict(c.execute("SELECT id, type FROM nodes"))
    metas = dict(c.execute("SELECT id, json_extract(metadata, '$.type') FROM nodes"))
    c.close()
    return [{"id": i, "title": t, "edge_count": n, "updated_at": u} for i, t, n, u in rows
            if n > 0 and (kinds.get(i) or metas.get(i)) != "memory"]


CAIRN_TREE: Path | None = None  # --cairn-rev: that revision of Cairn does the imports (to measure it)


def cairn(db: Path, *args: str) -> str:
    cmd = [str(ROOT / ".venv" / "bin" / "cairn")]
    env = None
    if CAIRN_TREE is not None:
        cmd = [str(ROOT / ".venv" / "bin" / "python"), "-c", "import sys; from tui.cli.main import main; sys.exit(main())"]
        env = dict(os.environ, PYTHONPATH=str(CAIRN_TREE))
    proc = subprocess.run([*cmd, "--db", str(db), *args], capture_output=True, text=True, timeout=600, env=env,
                          cwd=CAIRN_TREE)
    if proc.returncode != 0:
        raise SystemExit(f"cairn {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return proc.stdout


def cairn_nodes(db: Path) -> dict[int, dict]:
    """RA-H id -> the Cairn node imported from it."""
    c = sqlite3.connect(db)
    c.row_factory = sqlite3.Row
    out = {}
    for row in c.execute("SELECT id, title, description, source, event_date, metadata FROM nodes"):
        meta = json.loads(row["metadata"] or "{}")
        raha = meta.get("raha") or {}
        if "id" in raha:
            out[int(raha["id"])] = dict(row) | {"raha": raha}
    c.close()
    return out


def check_era(name: str, path: Path, work: Path, texts: dict[str, str], refs: dict[str, int],
              hubs_from_raha: list[dict] | None) -> dict:
    """Import `path` into a fresh Cairn database and compare node by node."""
    db = work / f"cairn-{name}.db"
    db.unlink(missing_ok=True)
    report = json.loads(cairn(db, "import", str(path), "--json", "--no-index"))
    report = report.get("report", report)
    warned = {w[0] for w in report.get("warnings", [])}
    fnodes, cnodes = file_nodes(path), cairn_nodes(db)
    by_id = {v: k for k, v in refs.items()}
    problems: list[str] = []
    counts = dict(nodes=len(fnodes), imported=0, shorter_than_file=0, full_text_kept=0, full_texts=0,
                  chunk_rows=0, chunk_rows_missing=0, columns_disagree=0, disagree_warned=0,
                  disagree_unwarned=0, summary_kept=0, summaries=0, source_is_summary_in_file=0,
                  dates=0, dates_converted_as_expected=0, dates_raw_kept=0, dates_wrong=0, text_repeated=0,
                  cairn_chars=0, file_longest_chars=0)
    for nid, f in fnodes.items():
        cn = cnodes.get(nid)
        if cn is None:
            problems.append(f"{name}: RA-H node {nid} not imported")
            continue
        counts["imported"] += 1
        ctext = cn["source"] or ""
        cdesc = cn["description"] or ""
        columns = {k: (f.get(k) or "").strip() for k in ("source", "chunk", "content", "notes")}
        joined_len = sum(len(t) for t in f["chunk_rows"])  # an upper bound (rows overlap); see below
        longest_col = max(len(v) for v in columns.values())
        if len(ctext.strip()) < longest_col:
            counts["shorter_than_file"] += 1
            problems.append(f"{name}: node {nid} {f['title']!r}: Cairn {len(ctext.strip()):,} characters, the "
                            f"file's longest column {longest_col:,}")
        counts["cairn_chars"] += len(ctext)
        counts["file_longest_chars"] += longest_col
        longest = max(columns.values(), key=len)
        if len(longest) >= 200 and bare(ctext).count(bare(longest)[:200]) > 1:
            counts["text_repeated"] += 1  # the same text twice (a join of the rows beside the column it came from)
            problems.append(f"{name}: node {nid} {f['title']!r}: Cairn's text holds the file's text twice")
        # every chunks row's words are in Cairn's text
        flat = squash(ctext)
        for t in f["chunk_rows"]:
            counts["chunk_rows"] += 1
            if squash(t) not in flat:
                counts["chunk_rows_missing"] += 1
        ref = by_id.get(nid)
        if ref in texts and texts[ref]:
            counts["full_texts"] += 1
            if texts[ref].strip() in ctext:
                counts["full_text_kept"] += 1
            else:
                problems.append(f"{name}: node {nid} {f['title']!r}: the full text given to RA-H is not in Cairn's "
                                f"text verbatim ({len(texts[ref]):,} given, {len(ctext):,} in Cairn; joined rows "
                                f"{joined_len:,})")
        # the text columns disagree: two of source, chunk and the chunks rows hold different words
        texts_here = {k: bare(columns[k]) for k in ("source", "chunk") if columns[k]}
        disagree = len(texts_here) == 2 and texts_here["source"] not in texts_here["chunk"] \
            and texts_here["chunk"] not in texts_here["source"]
        if f["chunk_rows"] and texts_here and not any(all(bare(t) in v for t in f["chunk_rows"])
                                                      for v in texts_here.values()):
            disagree = True
        if disagree:
            counts["columns_disagree"] += 1
            if f"node {nid}" in warned:
                counts["disagree_warned"] += 1
            else:
                counts["disagree_unwarned"] += 1
                problems.append(f"{name}: node {nid} {f['title']!r}: its text columns disagree and no warning names it")
        summary = columns["content"] or columns["notes"]
        if columns["source"] and columns["chunk"] and len(columns["source"]) < len(columns["chunk"]):
            counts["source_is_summary_in_file"] += 1
        if summary and len(summary) < longest_col:
            counts["summaries"] += 1
            if summary in cdesc or summary in ctext:
                counts["summary_kept"] += 1
            else:
                problems.append(f"{name}: node {nid}: the summary {summary[:40]!r} is nowhere in Cairn")
        # dates: the file's event_date, else metadata.published_date
        meta = json.loads(f.get("metadata") or "{}") if isinstance(f.get("metadata"), str) else {}
        raw = f.get("event_date") or meta.get("published_date") or (meta.get("source_metadata") or {}).get(
            "published_date")
        if raw:
            counts["dates"] += 1
            expected = next((want for (given, want) in DATES.values() if given == raw), "unknown")
            if raw == "Wed, 11 Feb 2026 07:00:00 GMT":
                expected = "2026-02-11"
            got = cn["event_date"]
            if expected is None and got is None and cn["raha"].get("event_date_raw") == raw \
                    and f"node {nid}" in warned:
                counts["dates_raw_kept"] += 1
            elif expected is not None and got == expected:
                counts["dates_converted_as_expected"] += 1
            else:
                counts["dates_wrong"] += 1
                problems.append(f"{name}: node {nid}: date {raw!r} -> {got!r} (expected {expected!r})")
    # hubs: Cairn's list against RA-H's newest query on the same file
    cairn_hubs = json.loads(cairn(db, "hubs", "--json", "--limit", "50"))
    cairn_hubs = cairn_hubs.get("hubs", cairn_hubs) if isinstance(cairn_hubs, dict) else cairn_hubs
    mine = [(h["title"], h.get("edge_count", h.get("edges"))) for h in cairn_hubs]
    theirs = [(h["title"], h["edge_count"]) for h in raha_hubs_sql(path)]
    counts["hubs"] = len(theirs)
    counts["hub_order_equal"] = mine == theirs
    counts["hub_ties"] = sum(1 for a, b in zip(raha_hubs_sql(path), raha_hubs_sql(path)[1:])
                             if a["edge_count"] == b["edge_count"] and a["updated_at"] == b["updated_at"])
    if mine != theirs:
        problems.append(f"{name}: hubs differ: Cairn {mine} RA-H {theirs}")
    if hubs_from_raha is not None:  # RA-H's own getHubNodes (May 2026), run with node on this file
        listed = {h["id"] for h in raha_hubs_sql(path)}
        own = [(h["title"], h["edge_count"]) for h in hubs_from_raha if h["id"] in listed]
        counts["hub_sql_equals_raha_code"] = own == theirs
    counts["warnings"] = len(report.get("warnings", []))
    counts["text_longer_than_source"] = report.get("text_longer_than_source")
    counts["problems"] = problems
    counts["_texts"] = {nid: (cn["source"], cn["description"]) for nid, cn in cnodes.items()}
    return counts


def reimport_fix(path: Path, work: Path) -> dict:
    """Import `path` with Cairn's previous RA-H importer (before CAIRN_FIX_COMMIT), then with this one."""
    old = work / "cairn-before-fix"
    if old.exists():
        shutil.rmtree(old)
    old.mkdir()
    data = run(["git", "-C", str(ROOT), "archive", "--format=tar", f"{CAIRN_FIX_COMMIT}^"], capture_output=True).stdout
    run(["tar", "-x", "-C", str(old)], input=data)
    db = work / "cairn-reimport.db"
    db.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=str(old))
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c",
                           "import sys; from tui.cli.main import main; sys.exit(main())", "--db", str(db), "import",
                           str(path), "--json", "--no-index"], cwd=old, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": f"the older Cairn could not import: {proc.stderr[-500:]}"}
    fnodes = file_nodes(path)

    def short() -> int:
        cn = cairn_nodes(db)
        return sum(1 for nid, f in fnodes.items() if nid in cn and len((cn[nid]["source"] or "").strip()) <
                   max(len((f.get(k) or "").strip()) for k in ("source", "chunk", "content", "notes")))

    before = short()
    report = json.loads(cairn(db, "import", str(path), "--json", "--no-index"))
    report = report.get("report", report)
    after = short()
    return {"short_after_older_import": before, "short_after_reimport": after, "updated": report.get("updated")}


# ---------------------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR, help="bare git dir of RA-H OS (a fetch of it)")
    ap.add_argument("--work", type=Path, help="working folder (default: a new temporary one)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "raha_real_npm",
                    help="where the npm packages are kept between runs")
    ap.add_argument("--keep", action="store_true", help="keep the working folder")
    ap.add_argument("--cairn-rev", help="import with this revision of Cairn (git archive of this repository)"
                    " instead of the working tree, e.g. to measure the importer before a change; results not saved")
    args = ap.parse_args()
    for tool in ("node", "npm", "sqlite3", "git", "bash"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is needed (RA-H's schema script runs sqlite3; its code runs with node)")
    for era, commit in COMMITS.items():
        git(args.mirror, "cat-file", "-e", f"{commit}^{{commit}}")
    work = args.work or Path(tempfile.mkdtemp(prefix="raha_real_"))
    work.mkdir(parents=True, exist_ok=True)
    stubs = work / "stubs"
    stubs.mkdir(exist_ok=True)
    for file, text in STUBS.items():
        (stubs / file).write_text(text)
    started = time.time()
    if args.cairn_rev:
        global CAIRN_TREE
        CAIRN_TREE = work / "cairn-rev"
        shutil.rmtree(CAIRN_TREE, ignore_errors=True)
        CAIRN_TREE.mkdir()
        data = run(["git", "-C", str(ROOT), "archive", "--format=tar", args.cairn_rev], capture_output=True).stdout
        run(["tar", "-x", "-C", str(CAIRN_TREE)], input=data)
    trees = {}
    for era, commit in COMMITS.items():
        tree = work / f"ra-h-{era}"
        if tree.exists():
            shutil.rmtree(tree)
        archive(args.mirror, commit, tree)
        versions = pinned_versions(args.mirror, commit)
        trees[era] = (tree, npm_install(versions, args.cache), dict(versions, **{"sqlite-vec": SQLITE_VEC}))
        log(f"{era}: {commit[:7]} archived, packages {versions}")

    files = {e: work / f"{e}.sqlite" for e in ("dec2025", "feb2026", "may2026", "may2026_from_dec")}
    for f in files.values():
        f.unlink(missing_ok=True)
        for side in ("-wal", "-shm"):
            Path(str(f) + side).unlink(missing_ok=True)
    # December: RA-H's schema script on an empty file, then its routes and services.
    tree, nm, _ = trees["dec2025"]
    files["dec2025"].touch()
    run(["bash", "scripts/database/sqlite-ensure-app-schema.sh", str(files["dec2025"])], cwd=tree,
        capture_output=True)
    plan, texts = dec_plan()
    out = run_driver(bundle(tree, stubs, nm, "routes"), tree, files["dec2025"], plan, work, "dec2025")
    refs = dict(out["created"])
    driver_errors = {"dec2025": out["errors"]}
    checkpoint(files["dec2025"])
    # February: its SQLiteClient migrates the December file; its route adds two nodes.
    shutil.copy(files["dec2025"], files["feb2026"])
    tree, nm, _ = trees["feb2026"]
    plan_f, texts_f = feb_plan()
    out = run_driver(bundle(tree, stubs, nm, "routes"), tree, files["feb2026"], plan_f, work, "feb2026")
    refs_feb = refs | out["created"]
    driver_errors["feb2026"] = out["errors"]
    checkpoint(files["feb2026"])
    # May: its SQLiteClient migrates the February file, and (separately) the December one.
    tree, nm, _ = trees["may2026"]
    hubs_driver = bundle(tree, stubs, nm, "hubs")
    shutil.copy(files["feb2026"], files["may2026"])
    out = run_driver(hubs_driver, tree, files["may2026"], {"steps": [{"kind": "hubs", "limit": 50}]}, work, "may2026")
    hubs_may, driver_errors["may2026"] = out.get("hubs"), out["errors"]
    checkpoint(files["may2026"])
    shutil.copy(files["dec2025"], files["may2026_from_dec"])
    out = run_driver(hubs_driver, tree, files["may2026_from_dec"], {"steps": [{"kind": "hubs", "limit": 50}]}, work,
                     "may2026_from_dec")
    hubs_may_dec, driver_errors["may2026_from_dec"] = out.get("hubs"), out["errors"]
    checkpoint(files["may2026_from_dec"])

    eras = {}
    all_texts = texts | texts_f
    for era, path in files.items():
        era_refs = refs_feb if era in ("feb2026", "may2026") else refs
        hubs = {"may2026": hubs_may, "may2026_from_dec": hubs_may_dec}.get(era)
        eras[era] = check_era(era, path, work, all_texts, era_refs, hubs)
        eras[era]["schema"] = schema_summary(path)
        eras[era]["driver_errors"] = driver_errors[era]
    base = eras["dec2025"]["_texts"]
    for era, counts in eras.items():
        mine = counts.pop("_texts")
        if era != "dec2025":  # the same RA-H nodes, upgraded: the same Cairn text and description
            same = [nid for nid in base if nid in mine and mine[nid] == base[nid]]
            counts["same_text_as_dec2025"] = f"{len(same)}/{sum(1 for nid in base if nid in mine)}"
    fix = reimport_fix(files["may2026"], work)
    result = {
        "bench": "raha_real", "mirror": str(args.mirror),
        "commits": {e: c[:7] for e, c in COMMITS.items()},
        "npm": {e: v for e, (_, _, v) in trees.items()},
        "eras": eras, "reimport": fix, "seconds": round(time.time() - started, 1),
    }
    problems = [p for e in eras.values() for p in e["problems"]]
    for p in problems:
        log("PROBLEM", p)
    if args.cairn_rev:
        result["cairn_rev"] = args.cairn_rev
    else:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    else:
        log(f"kept {work}")
    print(json.dumps(result, ensure_ascii=False))
    return 0


def checkpoint(path: Path) -> None:
    """Fold RA-H's WAL into the file, so the file alone is what RA-H left."""
    c = sqlite3.connect(path)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.execute("PRAGMA journal_mode = DELETE")
    c.close()


def schema_summary(path: Path) -> dict:
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    cols = [r[1] for r in c.execute("PRAGMA table_info(nodes)")]
    tables = sorted(r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")
                    if not r[0].startswith(("sqlite_", "nodes_fts", "chunks_fts")))
    n = {t: c.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in ("nodes", "edges", "chunks")
         if t in tables}
    c.close()
    return {"node_columns": [x for x in cols if x in ("source", "chunk", "content", "notes", "type", "event_date")],
            "dimension_tables": [t for t in tables if "dimension" in t], "rows": n}


if __name__ == "__main__":
    raise SystemExit(main())
