"""A PDF's pages as text, read by PDFium in a child process (core/capture/pdfium_pages.py).

`read_pdf(name, data)` returns the pages' text, PDFium's soft spaces (see pdfium_pages) and the title in
the document's information, or raises CaptureError in one sentence: password-protected, damaged, a
reader that crashed on the file, ran out of memory or took longer than READ_SECONDS. The child runs with
the interpreter running Cairn, started on this copy's pdfium_pages.py by its path and with -I (no cwd,
script folder, PYTHONPATH or user site on sys.path), so it is Cairn's reader whatever folder the user is
in and wherever Cairn is installed (site-packages/cairn/core/... or a checkout); nothing is written to disk.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from core.errors import InvalidInput

CHILD = Path(__file__).resolve().with_name("pdfium_pages.py")
READ_SECONDS = 300.0  # a PDF reads at 90-500 pages a second (bench/pdf_extract.py); 300 s is far past any book


class PdfRefused(InvalidInput):
    """The reader could not give this PDF's text; the message ends the sentence "<name> ..."."""


@dataclass
class PdfText:
    pages: list[str]
    soft: list[list[int]]  # per page: offsets of spaces not in the PDF (a word may run across them)
    title: str
    reader: str  # "pypdfium2 5.15.2"
    unreadable: list[int]  # numbers (from 1) of the pages the reader could not open
    outline: list[tuple[int, str, int]]  # the bookmarks: (level from 0, title, page index from 0)


def read_pdf(data: bytes, *, timeout: float | None = None) -> PdfText:
    timeout = READ_SECONDS if timeout is None else timeout
    try:
        done = subprocess.run([sys.executable, "-I", str(CHILD)], input=data, capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise PdfRefused(f"took the PDF reader longer than {timeout:g} s, so it was stopped; nothing was "
                         "imported") from exc
    if done.returncode < 0:
        raise PdfRefused(f"made the PDF reader stop ({_signal_name(-done.returncode)}); the file may be damaged or "
                         "made to attack PDF readers, so nothing was imported")
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        why = _last_line(done.stderr)
        if "MemoryError" in why:
            raise PdfRefused("needs more memory to read than Cairn gives a PDF, so nothing was imported")
        raise PdfRefused(f"could not be read by the PDF reader ({why or f'exit status {done.returncode}'}); "
                         "nothing was imported")
    if result.get("refused") == "password":
        raise PdfRefused("is password-protected; Cairn cannot read it without the password, so nothing was imported "
                         "(remove the password, e.g. `qpdf --decrypt`, and add it again)")
    if "refused" in result:
        detail = str(result.get("detail", "")).removeprefix("Failed to load document ").strip("().")
        raise PdfRefused(f"could not be read as a PDF ({detail}); it may be damaged or not a PDF, so nothing was "
                         "imported")
    pages = [str(p.get("text", "")) for p in result["pages"]]
    soft = [[int(k) for k in p.get("soft", [])] for p in result["pages"]]
    unreadable = [n for n, p in enumerate(result["pages"], 1) if p.get("unreadable")]
    outline = [(int(e["level"]), str(e["title"]), int(e["page"])) for e in result.get("outline", [])]
    return PdfText(pages, soft, str(result.get("title") or ""), str(result.get("pdfium", "pypdfium2")), unreadable,
                   outline)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return " ".join(lines[-1].split())[:200] if lines else ""
