"""Real HTML pages for the benchmarks, taken at run time from the manuals Debian ships (never committed).

Each generator's pages come from packages fetched with `apt-get download` and unpacked with
`dpkg-deb -x` into a cache folder (no root install; `apt-get update` once first if the lists are empty):
- sphinx:   python-requests-doc, python-jinja2-doc, python-attr-doc
- doxygen:  libopus-doc, libyaml-doc, libssh-doc (group, struct and header pages, not source listings)
- texinfo:  gettext-doc (texi2html, one page a chapter), r-doc-html (texi2any), libtool-doc (makeinfo)
- sqlite:   sqlite3-doc (SQLite's own hand-written site)
- asciidoc: git-doc (AsciiDoc)
- groff:    gettext-doc's man pages (groff -Thtml)
Per generator about PER_GENERATOR pages, chosen by an even stride through the sorted file list so the
choice is the same on every run. `python bench/real_pages.py` lists the corpus.
"""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CACHE = Path.home() / ".cache" / "cairn-bench" / "real-pages"
PER_GENERATOR = 20

# generator -> (packages, a test a page's path (inside the unpacked packages) must pass)
SOURCES: dict[str, tuple[tuple[str, ...], str]] = {
    "sphinx": (("python-requests-doc", "python-jinja2-doc", "python-attr-doc"),
               r"/html/(?!genindex|search|py-modindex|404|_)[^/].*\.html$"),
    "doxygen": (("libopus-doc", "libyaml-doc", "libssh-doc"),
                r"/html/(group__|struct|[a-z_]+_8h\.html)(?!.*_source)(?!.*-members).*\.html$"),
    "texinfo": (("gettext-doc", "r-doc-html", "libtool-doc"),
                r"(/gettext/gettext_\d+\.html|/R/doc/manual/R-[a-zA-Z]+\.html|/doc/libtool/libtool\.html)$"),
    "sqlite": (("sqlite3-doc",), r"/doc/sqlite3/[a-z][a-z0-9_]*\.html$"),
    "asciidoc": (("git-doc",), r"/git-doc/git-[a-z-]+\.html$"),
    "groff": (("gettext-doc",), r"/gettext/[a-z_]+\.[13]\.html$"),
}


@dataclass(frozen=True)
class RealPage:
    path: Path
    generator: str
    package: str
    html: str


def _unpacked(package: str, cache: Path) -> Path | None:
    """The package's files, downloaded and unpacked once into `cache`; None when apt cannot get it."""
    target = cache / "x" / package
    if target.is_dir() and any(target.iterdir()):
        return target
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{package}_*.deb"))
    if not found:
        done = subprocess.run(["apt-get", "download", package], cwd=debs, capture_output=True, text=True)
        found = sorted(debs.glob(f"{package}_*.deb"))
        if done.returncode != 0 or not found:
            print(f"real_pages: could not download {package}: {done.stderr.strip()[:200]}", file=sys.stderr)
            return None
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(found[-1]), str(target)], check=True)
    return target


def _read(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    head = data[:2048].decode("ascii", "replace")
    m = re.search(r"charset=[\"']?([A-Za-z0-9_-]+)", head)
    name = (m.group(1) if m else "utf-8").lower()
    name = "cp1252" if name in ("us-ascii", "iso-8859-1", "latin1") else name
    try:
        return data.decode(name, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


def _spread(paths: list[Path], count: int) -> list[Path]:
    if len(paths) <= count:
        return paths
    step = len(paths) / count
    return [paths[int(i * step)] for i in range(count)]


def build(cache: Path = CACHE, per_generator: int = PER_GENERATOR) -> tuple[list[RealPage], list[str]]:
    """The corpus, and what was skipped (a package apt could not get, a generator with no page)."""
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        raise SystemExit("real_pages needs apt-get and dpkg-deb (a Debian or Ubuntu machine)")
    pages: list[RealPage] = []
    skipped: list[str] = []
    for generator, (packages, pattern) in SOURCES.items():
        found: list[tuple[Path, str]] = []
        for package in packages:
            root = _unpacked(package, cache)
            if root is None:
                skipped.append(f"{generator}: {package} not available")
                continue
            files = sorted(p for p in root.rglob("*.html") if p.is_file() and not p.is_symlink()
                           and re.search(pattern, str(p)))
            found += [(p, package) for p in _spread(files, per_generator)]
        chosen = _spread(sorted(found), per_generator)
        if not chosen:
            skipped.append(f"{generator}: no page")
        pages += [RealPage(path, generator, package, _read(path)) for path, package in chosen]
    return pages, skipped


if __name__ == "__main__":
    corpus, missing = build()
    for page in corpus:
        print(page.generator, page.package, page.path.name, len(page.html))
    for line in missing:
        print("skipped:", line)
