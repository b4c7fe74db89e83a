"""A PDF's text page by page through PDFium, run as a child process: `python -I path/to/pdfium_pages.py`.
It imports only the standard library and pypdfium2 (run by its path, it has no `core` to import from).

PDFium (Chrome's PDF engine, through pypdfium2) reads the words of real PDFs closest to poppler's
`pdftotext` of the readers measured (bench/pdf_extract.py, issue 24 item 2). It is C: it runs in a
child process so that a PDF that crashes it, loops in it or eats memory costs that child, never the app
or the CLI holding the user's work (the parent, core/capture/pdf_reader.py, gives it a deadline and reads
a crash as a refusal). PDFium is not thread-safe either (pypdfium2's documentation: "It is not allowed to
call pdfium functions simultaneously across different threads, not even with different documents");
one process per file keeps every call on one thread.

The PDF's bytes come on stdin; one JSON object goes to stdout:
  {"pages": [{"text": ..., "soft": [offsets], ("unreadable": why)}], "outline": [{"level", "title", "page"}],
   "title": ..., "pdfium": version}
or {"refused": "password" | "damaged", "detail": ...} with exit status 3.

Each page's text is PDFium's (`FPDFText_GetText`), with two things PDFium does not do:
- a space where two letters on one line stand apart by more than SPACE_GAP of the font's height and
  PDFium put none (Ghostscript's PDFs: "makecurl" for "make curl" at a font change; poppler breaks
  words at such gaps too);
- the offsets of the spaces that are not in the PDF ("soft": the ones PDFium generated from positions,
  and the ones added above), so core/capture/pdf_words.py can take back a space that splits a word at a
  kerning (`v alue`) where the document shows the word whole elsewhere.
PDFium marks a word hyphenated at a line end with U+FFFE and joins the lines there; it is kept for
pdf_words to resolve.
"""

from __future__ import annotations

import ctypes
import json
import resource
import sys

SPACE_GAP = 0.12  # of the letters' height (≈ the font size); poppler's own minimum word break is 0.1 em
MEMORY_LIMIT = 4 << 30  # bytes of address space the child may take (a PDF that asks for more is refused)
OUTLINE_ENTRIES = 2_000  # bookmarks kept (a book's table of contents has a few hundred)
OUTLINE_DEPTH = 6


def _outline(doc) -> list[dict]:
    """The document's bookmarks (its outline) with the page each points to; pypdfium2's walk stops at
    a cycle and at OUTLINE_DEPTH."""
    entries = []
    for mark in doc.get_toc(max_depth=OUTLINE_DEPTH):
        if len(entries) >= OUTLINE_ENTRIES:
            break
        dest = mark.get_dest()
        page = dest.get_index() if dest is not None else None
        title = " ".join(mark.get_title().split())[:200]
        if title and page is not None and 0 <= page < len(doc):
            entries.append({"level": mark.level, "title": title, "page": page})
    return entries


def _page(textpage, raw) -> dict:
    import pypdfium2.raw as pdfium_c

    text = textpage.get_text_range()
    count = textpage.count_chars()
    if len(text) != count:  # characters outside the BMP: offsets would not line up; take PDFium's text as is
        return {"text": text, "soft": []}
    rect = pdfium_c.FS_RECTF()
    box = ctypes.byref(rect)
    loose_box, generated = pdfium_c.FPDFText_GetLooseCharBox, pdfium_c.FPDFText_IsGenerated
    out: list[str] = []
    soft: list[int] = []
    last = None  # (right, bottom, height) of the letter before, on this run of letters
    for k, ch in enumerate(text):
        if not ch.isalpha():
            if ch == " " and generated(raw, k):
                soft.append(len(out))
            last = None
            out.append(ch)
            continue
        loose_box(raw, k, box)
        height = rect.top - rect.bottom
        if last is not None:
            right, bottom, last_height = last
            size = min(height, last_height)
            if size > 0 and abs(rect.bottom - bottom) < 0.5 * size and rect.left - right > SPACE_GAP * size:
                soft.append(len(out))
                out.append(" ")
        last = (rect.right, rect.bottom, height)
        out.append(ch)
    return {"text": "".join(out), "soft": soft}


def read(data: bytes) -> dict:
    import pypdfium2

    try:
        doc = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        # FPDF_ERR_PASSWORD = 4; FPDF_ERR_SECURITY = 5 (fpdfview.h)
        return {"refused": "password" if code in (4, 5) else "damaged", "detail": str(exc)}
    try:
        pages = []
        for i in range(len(doc)):
            try:
                page = doc[i]
                textpage = page.get_textpage()
            except pypdfium2.PdfiumError as exc:  # one damaged page: the others are still read
                pages.append({"text": "", "soft": [], "unreadable": str(exc)})
                continue
            try:
                pages.append(_page(textpage, textpage.raw))
            finally:
                textpage.close()
                page.close()
        meta = doc.get_metadata_dict(skip_empty=True)
        outline = _outline(doc)
    finally:
        doc.close()
    return {"pages": pages, "outline": outline, "title": meta.get("Title", ""),
            "pdfium": f"pypdfium2 {pypdfium2.version.PYPDFIUM_INFO.version}"}


def main() -> int:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    result = read(sys.stdin.buffer.read())
    sys.stdout.write(json.dumps(result))  # ASCII: a lone surrogate in a PDF string survives the pipe
    return 3 if "refused" in result else 0


if __name__ == "__main__":
    sys.exit(main())
