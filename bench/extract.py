"""Which extractor for `cairn add --url`: trafilatura against readability-lxml on the fixture pages.

For each page of tests/web_pages/ (gold.json says which sentences are the article and which are
navigation, ads, sidebars, comments and footers) it measures:
  kept         share of the article's sentences found in the extracted text (higher is better)
  boilerplate  share of the boilerplate sentences found in it (lower is better)
  metadata     share of title, author, date and site found exactly (readability has only a title)
  time_ratio   time per page over a bare lxml parse of the same page (a ratio, not milliseconds,
               so it compares across machines)
and the characters each extracts from nav_only.html (navigation and a JavaScript notice only: 0 is
right). "trafilatura" runs as the product does (favor_precision); "trafilatura_default" without it.

Run with a Python that has both (the product needs only trafilatura):
    /tmp/capvenv/bin/python bench/extract.py
The last line of the output is one JSON object.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

import lxml.html

PAGES = Path(__file__).resolve().parent.parent / "tests" / "web_pages"
REPEAT = 20


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def share(sentences: list[str], text: str) -> float:
    found = sum(1 for s in sentences if normalise(s) in text)
    return found / len(sentences) if sentences else 0.0


def trafilatura_extract(html: str, url: str, precision: bool = True) -> dict:
    """As core/capture/web.py calls it (favor_precision: a page of navigation alone gives no text)."""
    import trafilatura

    doc = trafilatura.bare_extraction(html, url=url, with_metadata=True, include_comments=False,
                                      include_formatting=True, favor_precision=precision)
    if doc is None:
        return {"text": "", "title": None, "author": None, "date": None, "site": None}
    return {"text": doc.text or "", "title": doc.title, "author": doc.author, "date": doc.date, "site": doc.sitename}


def readability_extract(html: str, url: str) -> dict:
    from readability import Document

    doc = Document(html, url=url)
    summary = doc.summary(html_partial=True)
    text = lxml.html.fromstring(summary).text_content() if summary.strip() else ""
    return {"text": text, "title": doc.short_title(), "author": None, "date": None, "site": None}


EXTRACTORS = {"trafilatura": trafilatura_extract, "readability": readability_extract,
              "trafilatura_default": lambda html, url: trafilatura_extract(html, url, precision=False)}


def per_call(fn, repeat: int = REPEAT) -> float:
    """The fastest of `repeat` timings of fn() (after one warm-up call): on a busy machine the minimum
    is the least disturbed estimate, and both sides of a ratio are measured the same way."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def decode(path: Path, charset: str) -> str:
    # As core/capture/web.py does: a page labelled ISO-8859-1 is read as windows-1252 (the HTML rule).
    return path.read_bytes().decode("cp1252" if charset == "iso-8859-1" else charset, errors="replace")


def main() -> None:
    gold = json.loads((PAGES / "gold.json").read_text(encoding="utf-8"))
    pages = {name: spec for name, spec in gold.items() if not name.startswith("_")}
    rows: dict[str, dict[str, dict]] = {name: {} for name in EXTRACTORS}
    for page, spec in pages.items():
        html = decode(PAGES / page, spec["charset"])
        url = f"http://127.0.0.1/{page}"
        parse = per_call(lambda: lxml.html.fromstring(html))
        for name, extract in EXTRACTORS.items():
            result = extract(html, url)
            text = normalise(result["text"])
            meta = spec["meta"]
            found = [k for k in meta if normalise(result.get(k) or "") == normalise(meta[k])]
            rows[name][page] = {
                "kept": round(share(spec["article"], text), 3),
                "boilerplate": round(share(spec["boilerplate"], text), 3),
                "metadata": round(len(found) / len(meta), 3),
                "metadata_found": found,
                "time_ratio": round(per_call(lambda: extract(html, url)) / parse, 1),
            }
            print(f"{name:12} {page:14} kept {rows[name][page]['kept']:.2f}  boilerplate "
                  f"{rows[name][page]['boilerplate']:.2f}  metadata {','.join(found) or '-':26} "
                  f"time ×{rows[name][page]['time_ratio']} of an lxml parse", file=sys.stderr)

    # A page of navigation and a "enable JavaScript" line only: an extractor should give no text (so
    # Cairn says "nothing extractable" instead of saving the menu as a note).
    shell = (PAGES / "nav_only.html").read_text(encoding="utf-8")
    empty_page_text = {name: len(normalise(extract(shell, "http://127.0.0.1/nav_only.html")["text"]))
                       for name, extract in EXTRACTORS.items()}
    print(f"characters extracted from nav_only.html: {empty_page_text}", file=sys.stderr)

    def mean(name: str, key: str) -> float:
        return round(statistics.mean(r[key] for r in rows[name].values()), 3)

    summary = {name: {key: mean(name, key) for key in ("kept", "boilerplate", "metadata", "time_ratio")}
               for name in EXTRACTORS}
    import readability  # noqa: F401  (its version for the record)
    import trafilatura
    from importlib.metadata import version

    print(json.dumps({
        "bench": "extract",
        "pages": len(pages),
        "versions": {"trafilatura": trafilatura.__version__, "readability-lxml": version("readability-lxml"),
                     "lxml": version("lxml")},
        "mean": summary,
        "nav_only_chars": empty_page_text,
        "per_page": rows,
    }, ensure_ascii=False))


if __name__ == "__main__":
    main()
