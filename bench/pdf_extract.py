"""Which reader gives a PDF's text closest to poppler's, and what Cairn stores (issue 24, item 2).

    apt-get install groff ghostscript poppler-utils   # the corpus and the reference
    .venv/bin/python bench/pdf_extract.py             # pypdf comes with the test extras

Real PDFs made at run time (bench/real_pdfs.py: man pages typeset by gropdf and by Ghostscript, the
pdfTeX PDFs Debian ships), pdftotext (poppler) as the reference, page by page. Readers:
- pypdf, pypdf_layout: pypdf's plain and layout modes (Cairn's reader before this issue);
- pdfium: pypdfium2's text as it comes (`get_text_range`);
- pdfminer: pdfminer.six's layout analysis, where it is installed (not a dependency);
- cairn: what Cairn stores (core/capture/files.py: PDFium in a child process with its missing spaces
  added, then core/capture/pdf_words.py: guessed spaces mended, ligatures folded, hyphenation joined).
Per document and reader:
- recall: the multiset of words (two or more letters, case folded) of the reference the reader gives too;
- splits: adjacent pieces with only white space between them whose join is a word of the reference and
  one of which is not (`e xecutes`);
- joins: words the reader gives that are two adjacent words in the reference (`makecurl`);
- ligatures: U+FB00..U+FB06 left in the text; hyphens: a word hyphenated at a line end left cut
  (`com-` + newline + `mand`, or PDFium's U+FFFE mark) where the reference's vocabulary has it whole;
- order: the share of the reference's adjacent word pairs, page by page, that the reader has adjacent too;
- pages_per_s, and speed: pages per second over pdftotext's own in the same run (a ratio that compares
  across machines); peak_mb: the most memory the reading process (or its child) held.
The last line is one JSON object; the figures are in bench/results/pdf_extract.json.
"""

from __future__ import annotations

import importlib.util
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from real_pdfs import build  # noqa: E402

LIGATURES = "\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06"
_LETTERS = re.compile(r"[A-Za-z]+")


def words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]{2,}", text)


# -- the readers (each run in its own process by measure()) ---------------------------------------
def pypdf_plain(path: str) -> list[str]:
    import pypdf

    return [p.extract_text() or "" for p in pypdf.PdfReader(path).pages]


def pypdf_layout(path: str) -> list[str]:
    import pypdf

    return [p.extract_text(extraction_mode="layout") or "" for p in pypdf.PdfReader(path).pages]


def pdfium(path: str) -> list[str]:
    import pypdfium2

    doc = pypdfium2.PdfDocument(path)
    out = []
    for i in range(len(doc)):
        page = doc[i].get_textpage()
        out.append(page.get_text_range().replace("\r\n", "\n"))
        page.close()
    return out


def pdfminer_six(path: str) -> list[str]:
    from pdfminer.high_level import extract_text

    return extract_text(path).split("\f")[: _page_count(path)]


def _page_count(path: str) -> int:
    import pypdfium2

    return len(pypdfium2.PdfDocument(path))


def cairn(path: str) -> list[str]:
    from core.capture.files import read_file

    captured = read_file(Path(path))
    starts = [*captured.page_starts, len(captured.source) + 2]
    return [captured.source[a:b - 2] for a, b in zip(starts, starts[1:])]


READERS = {"pypdf": pypdf_plain, "pypdf_layout": pypdf_layout, "pdfium": pdfium, "cairn": cairn}
if importlib.util.find_spec("pdfminer") is not None:  # pdfminer.six, where installed; not a dependency
    READERS["pdfminer"] = pdfminer_six


def _child(reader: str, path: str) -> None:
    start = time.perf_counter()
    pages = READERS[reader](path)
    seconds = time.perf_counter() - start
    # VmHWM: this process's own high-water mark (ru_maxrss would carry the parent's over exec); the
    # children's (Cairn's PDFium child) counts from the size of this process when it forked them
    hwm = [line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:")]
    peak_kb = max(int(hwm[0].split()[1]) if hwm else 0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(json.dumps({"pages": pages, "seconds": seconds, "peak_mb": round(peak_kb / 1024, 1)}))


def measure(reader: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", reader, str(path)], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    return json.loads(out.splitlines()[-1])


# -- the comparison -------------------------------------------------------------------------------
def compare(reference: list[str], pages: list[str]) -> dict:
    ref_text = "\n".join(reference).lower()
    ref = Counter(w.lower() for w in words(ref_text))
    vocab = set(_LETTERS.findall(ref_text))
    pieces = _LETTERS.findall(ref_text)
    ref_pairs = {a + b for a, b in zip(pieces, pieces[1:])}
    text = "\n".join(pages)
    got = Counter(w.lower() for w in words(text))
    runs = [(m.group().lower(), m.start(), m.end()) for m in _LETTERS.finditer(text)]
    splits = sum(1 for (a, _, a_end), (b, b_start, _) in zip(runs, runs[1:])
                 if text[a_end:b_start].isspace() and a + b in vocab and (a not in vocab or b not in vocab))
    joins = sum(n for w, n in (got - ref).items() if w in ref_pairs)
    hyphens = sum(1 for m in re.finditer(r"([A-Za-z]+)(?:-\n\s*|\ufffe\s*)([A-Za-z]+)", text)
                  if (m.group(1) + m.group(2)).lower() in vocab)
    kept = total = 0
    for ref_page, page in zip(reference, pages):
        ref_words = [w.lower() for w in words(ref_page)]
        mine = [w.lower() for w in words(page)]
        pairs = set(zip(mine, mine[1:]))
        total += max(0, len(ref_words) - 1)
        kept += sum(1 for pair in zip(ref_words, ref_words[1:]) if pair in pairs)
    return {"recall": round(sum((got & ref).values()) / max(1, sum(ref.values())), 4), "splits": splits,
            "joins": joins, "ligatures": sum(text.count(c) for c in LIGATURES), "hyphens": hyphens,
            "order": round(kept / max(1, total), 4)}


def main() -> None:
    result: dict = {"documents": {}}
    with tempfile.TemporaryDirectory() as tmp:
        docs, skipped = build(Path(tmp), groff=("bash", "tmux", "find"), gs=("git-config", "curl", "jq"))
        result["skipped"] = skipped
        for doc in docs:
            start = time.perf_counter()
            subprocess.run(["pdftotext", "-enc", "UTF-8", str(doc.path), "-"], capture_output=True, check=True)
            reference_per_s = len(doc.reference_pages) / (time.perf_counter() - start)
            row = {}
            for name in READERS:
                got = measure(name, doc.path)
                figures = compare(doc.reference_pages, got["pages"])
                row[name] = {**figures,
                             "splits_per_10_pages": round(10 * figures["splits"] / max(1, len(doc.reference_pages)), 1),
                             "pages_per_s": round(len(got["pages"]) / got["seconds"], 1),
                             "speed": round(len(got["pages"]) / got["seconds"] / reference_per_s, 2),
                             "peak_mb": got["peak_mb"]}
            result["documents"][f"{doc.path.name} ({doc.producer}, {len(doc.reference_pages)} pages)"] = row
    worst = {name: {"recall": min(r[name]["recall"] for r in result["documents"].values()),
                    "splits_per_10_pages": max(r[name]["splits_per_10_pages"] for r in result["documents"].values())}
             for name in READERS}
    result["worst"] = worst
    result["target"] = {"recall": ">= 0.99 per producer", "splits_per_10_pages": "<= 5"}
    print(json.dumps(result))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], sys.argv[3])
    else:
        main()
