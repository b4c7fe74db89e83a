"""Which reader gives a PDF's text closest to poppler's (issue 24, item 2): the first measurements.

Run with an environment that has pypdfium2 besides the project's pypdf (the product needs pypdf only,
until this comparison picks):
    python3 -m venv /tmp/pdfvenv && /tmp/pdfvenv/bin/pip install pypdfium2 pypdf
    /tmp/pdfvenv/bin/python bench/pdf_extract.py
Real PDFs made at run time (bench/real_pdfs.py: man pages by gropdf and by Ghostscript, the pdfTeX PDFs
Debian ships), pdftotext (poppler) as the reference, page by page. Per document and reader:
- recall: the multiset of words (two or more letters, case folded) of the reference that the reader
  gives too;
- splits: adjacent pieces whose join is a word of the reference and one of which is not (`e xecutes`);
- ligatures: U+FB00..U+FB04 code points left in the text;
- pages_per_s.
Not yet measured: line-end hyphenation, reading order, peak memory. The last line is one JSON object.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # core/capture/pdf_words.py: no dependencies

from real_pdfs import build  # noqa: E402

LIGATURES = "\ufb00\ufb01\ufb02\ufb03\ufb04"


def words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]{2,}", text)


def pypdf_plain(path: Path) -> list[str]:
    import pypdf

    return [p.extract_text() or "" for p in pypdf.PdfReader(str(path)).pages]


def pypdf_layout(path: Path) -> list[str]:
    import pypdf

    return [p.extract_text(extraction_mode="layout") or "" for p in pypdf.PdfReader(str(path)).pages]


def pdfium(path: Path) -> list[str]:
    import pypdfium2

    doc = pypdfium2.PdfDocument(str(path))
    out = []
    for i in range(len(doc)):
        page = doc[i].get_textpage()
        out.append(page.get_text_range())
        page.close()
    return out


def pypdf_whole(path: Path) -> list[str]:
    """What Cairn stores today: pypdf's text with its words made whole (core/capture/pdf_words.py)."""
    from core.capture.pdf_words import whole_words

    return whole_words(pypdf_plain(path))


def pdfium_whole(path: Path) -> list[str]:
    from core.capture.pdf_words import whole_words

    return whole_words([p.replace("\r\n", "\n") for p in pdfium(path)])


READERS = {"pypdf": pypdf_plain, "pypdf_layout": pypdf_layout, "pypdf_whole": pypdf_whole, "pdfium": pdfium,
           "pdfium_whole": pdfium_whole}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        docs, skipped = build(Path(tmp), groff=("bash", "tmux", "find"), gs=("git-config", "curl", "jq"))
        result: dict = {"skipped": skipped, "documents": {}}
        for doc in docs:
            ref = Counter(w.lower() for page in doc.reference_pages for w in words(page))
            vocab = set(ref)
            row = {}
            for name, read in READERS.items():
                t = time.perf_counter()
                pages = read(doc.path)
                seconds = time.perf_counter() - t
                got = Counter(w.lower() for page in pages for w in words(page))
                pieces = [w.lower() for page in pages for w in re.findall(r"[A-Za-z]+", page)]
                splits = sum(1 for a, b in zip(pieces, pieces[1:])
                             if a + b in vocab and (a not in vocab or b not in vocab))
                row[name] = {"recall": round(sum((got & ref).values()) / max(1, sum(ref.values())), 4),
                             "splits": splits, "ligatures": sum(p.count(c) for p in pages for c in LIGATURES),
                             "pages_per_s": round(len(pages) / seconds, 1)}
            result["documents"][f"{doc.path.name} ({doc.producer}, {len(doc.reference_pages)} pages)"] = row
    print(json.dumps(result))


if __name__ == "__main__":
    main()
