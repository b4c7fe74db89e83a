"""Real PDFs for the benchmarks, made at run time from what Debian ships (never committed).

Producers (each skipped, and said so, when its tool is missing; `apt-get install groff ghostscript`):
- gropdf: man pages typeset by `groff -Tpdf -man` (groff's own PDF writer: kerning by positioned
  glyph runs, the source of split words);
- Ghostscript: other man pages through `groff -Tps -man | ps2pdf` (Ghostscript's pdfwrite);
- pdfTeX and whatever else: the PDFs Debian's packages ship under /usr/share/doc (read in place; their
  producer read from their metadata with `pdfinfo`).
Each man page is typeset by one producer only, so a phrase from one document occurs in no other.
The reference text is poppler's: `pdftotext` (poppler-utils), page by page (pages end with a form feed).
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MAN = Path("/usr/share/man/man1")
GROFF_PAGES = ("bash", "tmux", "find", "wget", "top", "less")
GS_PAGES = ("git-config", "curl", "gpg", "jq", "zip", "xz")
SHIPPED = sorted(Path("/usr/share/doc").rglob("*.pdf")) if Path("/usr/share/doc").is_dir() else []


@dataclass
class RealPdf:
    path: Path
    producer: str  # gropdf | ghostscript | the shipped file's Producer
    reference_pages: list[str]  # pdftotext's text of each page


def _man_source(name: str) -> bytes | None:
    for suffix in (".1.gz", ".1"):
        p = MAN / f"{name}{suffix}"
        if p.is_file():
            data = p.read_bytes()
            return gzip.decompress(data) if suffix.endswith(".gz") else data
    return None


def _producer(path: Path) -> str:
    out = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Producer:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def reference_pages(path: Path) -> list[str]:
    """pdftotext's text of each page (poppler: the reference)."""
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True, check=True).stdout
    pages = out.decode("utf-8", "replace").split("\f")
    return pages[:-1] if pages and not pages[-1].strip() else pages


def build(folder: Path, *, groff: tuple[str, ...] = GROFF_PAGES, gs: tuple[str, ...] = GS_PAGES,
          shipped: bool = True) -> tuple[list[RealPdf], list[str]]:
    """The corpus in `folder`, and what was skipped (a tool missing, a man page absent)."""
    folder.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    if not shutil.which("pdftotext"):
        raise SystemExit("pdftotext (poppler-utils) is the reference: apt-get install poppler-utils")
    made: list[RealPdf] = []
    can_pdf = shutil.which("groff") and subprocess.run(
        ["groff", "-Tpdf", "-man"], input=b".TH X 1\n", capture_output=True).returncode == 0
    can_ps = shutil.which("groff") and shutil.which("ps2pdf")
    for names, how in ((groff, "gropdf"), (gs, "ghostscript")):
        if (how == "gropdf" and not can_pdf) or (how == "ghostscript" and not can_ps):
            skipped.append(f"{how}: its tool is missing (groff with its pdf device; ghostscript's ps2pdf)")
            continue
        for name in names:
            source = _man_source(name)
            if source is None:
                skipped.append(f"{how}: no man page {name}")
                continue
            path = folder / f"{name}.{how}.pdf"
            if how == "gropdf":
                pdf = subprocess.run(["groff", "-Tpdf", "-man"], input=source, capture_output=True).stdout
                path.write_bytes(pdf)
            else:
                ps = subprocess.run(["groff", "-Tps", "-man"], input=source, capture_output=True).stdout
                subprocess.run(["ps2pdf", "-", str(path)], input=ps, capture_output=True, check=True)
            if path.stat().st_size == 0:
                skipped.append(f"{how}: {name} gave an empty PDF")
                continue
            made.append(RealPdf(path, how, reference_pages(path)))
    for path in SHIPPED if shipped else []:
        try:
            made.append(RealPdf(path, _producer(path), reference_pages(path)))
        except subprocess.CalledProcessError:
            skipped.append(f"shipped: pdftotext could not read {path}")
    return made, skipped
