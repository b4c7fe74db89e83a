"""Which library reads a PDF's text for core/capture/files.py: pypdf (pure Python) or pdfminer.six.

Run with an environment that has both (the product only needs pypdf):
    /tmp/capvenv/bin/python bench/pdf_text.py [--pages 120]

PDFs are generated here (tests/pdf_maker.py: Helvetica text by `Tj`, words spaced by positioning in
`TJ` arrays, two columns), plus any PDF under ../shared (their text is unknown: speed only). Measured:
- speed: pages per second, and as a ratio to an in-run reference (pypdf opening the file and reading
  every page's raw content stream without interpreting it), so the numbers compare across machines;
- fidelity: the share of the known words recovered (multiset recall) and reading order (difflib ratio
  of the recovered word sequence to the true one, per page);
- import cost: the module's import time in a fresh interpreter, as a ratio to `import json`;
- memory: tracemalloc's peak while extracting the largest generated PDF.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from pdf_maker import make_pdf  # noqa: E402

WORDS = ("soil compost fungus root leaf seed water light garden tomato bean hive honey bee pollen flower "
         "river stone field winter summer harvest market bread grain apple orchard ladder basket").split()


def corpus(pages: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(pages):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 11))) for _ in range(40)]
        out.append("\n".join(lines))
    return out


# -- extractors: bytes -> list of page texts ------------------------------------------------------
def pypdf_pages(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text() or "" for p in PdfReader(io.BytesIO(data)).pages]


def pdfminer_pages(data: bytes) -> list[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    return ["".join(el.get_text() for el in page if isinstance(el, LTTextContainer))
            for page in extract_pages(io.BytesIO(data))]


def reference_pages(data: bytes) -> list[bytes]:
    """The floor: parse the file and read each page's content stream, no text interpretation."""
    from pypdf import PdfReader

    return [p.get_contents().get_data() if p.get_contents() else b"" for p in PdfReader(io.BytesIO(data)).pages]


EXTRACTORS = {"pypdf": pypdf_pages, "pdfminer.six": pdfminer_pages}


def timed(fn, data: bytes, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn(data)
        best = min(best, time.perf_counter() - t)
    return best, result


def fidelity(truth: list[str], got: list[str]) -> dict:
    recalled = total = 0
    order = []
    for want, have in zip(truth, got + [""] * (len(truth) - len(got))):
        w, h = want.split(), have.split()
        total += len(w)
        recalled += sum((Counter(w) & Counter(h)).values())
        order.append(difflib.SequenceMatcher(None, w, h, autojunk=False).ratio())
    return {"word_recall": round(recalled / total, 4), "order": round(statistics.mean(order), 4),
            "pages_found": len(got)}


def import_seconds(module: str, runs: int = 5) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
             for _ in range(runs)]
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=120)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import pypdf
    import pdfminer

    truth = corpus(args.pages)
    docs = {layout: make_pdf(truth, title="Bench", layout=layout) for layout in ("plain", "kerned", "columns")}
    shared = sorted((ROOT.parent / "shared").rglob("*.pdf"))[:5]

    ref_s, _ = timed(reference_pages, docs["plain"], args.repeat)
    result: dict = {"bench": "pdf_text", "pages": args.pages, "versions": {"pypdf": pypdf.__version__,
                    "pdfminer.six": pdfminer.__version__}, "reference": "pypdf parse + raw content streams",
                    "reference_pages_per_s": round(args.pages / ref_s, 1), "shared_pdfs": len(shared)}
    json_import = import_seconds("json")
    for name, fn in EXTRACTORS.items():
        entry: dict = {}
        for layout, data in docs.items():
            seconds, pages = timed(fn, data, args.repeat)
            entry[layout] = {"pages_per_s": round(args.pages / seconds, 1),
                             "x_reference_time": round(seconds / ref_s, 2), **fidelity(truth, pages)}
        for path in shared:
            seconds, pages = timed(fn, path.read_bytes(), 1)
            entry.setdefault("shared", []).append({"file": path.name, "pages": len(pages),
                                                   "pages_per_s": round(len(pages) / seconds, 1)})
        tracemalloc.start()
        fn(docs["plain"])
        entry["peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 1e6, 1)
        tracemalloc.stop()
        module = "pypdf" if name == "pypdf" else "pdfminer.high_level"
        seconds = import_seconds(module)
        entry["import_ms"] = round(seconds * 1000, 1)
        entry["import_x_json"] = round(seconds / json_import, 1)
        result[name] = entry
        print(f"{name}: {json.dumps(entry)}", file=sys.stderr)
    p, m = result["pypdf"], result["pdfminer.six"]
    result["pdfminer_over_pypdf_speed"] = round(m["plain"]["pages_per_s"] / p["plain"]["pages_per_s"], 2)
    result["pdfminer_over_pypdf_peak"] = round(m["peak_mb"] / p["peak_mb"], 2) if p["peak_mb"] else None
    print(json.dumps(result))


if __name__ == "__main__":
    main()
