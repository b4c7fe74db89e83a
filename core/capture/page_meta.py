"""A captured page's title and date, by rules that real manuals showed were needed (issue 24, item 4).

- `page_title`: the extractor's title without permalink glyphs (Sphinx's "¶" or its icon-font glyph,
  Doxygen's "◆") or markup; the page's own main heading (its first h1, or Doxygen's div.title) instead
  when the title does not contain that heading (a site banner, the same on every chapter; a member name
  Doxygen's first h2 gave).
- `page_date`: a date from the page's metadata (meta tags, JSON-LD, <time>, its address) or a visible
  byline, never from its text: htmldate reads a copy of the page that holds only its <head>, its <time>
  elements and its byline-like elements, none inside code or examples (a log line's 2010-12-12 in a
  code sample was taken as the page's date).
"""

from __future__ import annotations

import copy
import html as html_text
import re

from lxml import html as lxml_html

from core.capture.html_markdown import without_glyphs, words

CODE = ("pre", "code", "samp", "kbd", "tt", "var", "textarea", "script", "style", "xmp", "listing")
GENERIC_HEADINGS = {"contents", "table of contents", "index", "search", "menu", "navigation", "home", "welcome"}
BYLINE_WORDS = {"byline", "date", "dateline", "published", "posted", "pubdate", "timestamp", "postmeta", "meta",
                "datepublished", "datecreated", "datemodified", "updated", "author", "entry", "post"}
MAX_BYLINE_WORDS = 30


def clean_title(value: str | None) -> str:
    """A title as one line of plain text: tags and entities gone, no permalink glyphs."""
    if not value:
        return ""
    text = html_text.unescape(re.sub(r"<[^>]*>", " ", value))
    return without_glyphs(re.sub(r"\s+", " ", text))


def main_heading(root) -> str:
    """The page's own heading: its first h1 (without permalink anchors), or Doxygen's div.title."""
    found = root.xpath("//h1[normalize-space()]") or root.xpath('//div[@class="title"][normalize-space()]')
    if not found:
        return ""
    heading = copy.deepcopy(found[0])
    for anchor in heading.xpath('.//a[contains(@class, "headerlink")]|.//span[@class="permalink"]'):
        anchor.drop_tree()
    return clean_title(heading.text_content())


def _specific(heading: str, site: str | None) -> bool:
    norm = heading.lower().strip()
    return (1 <= len(words(heading)) <= 25 and norm not in GENERIC_HEADINGS
            and norm != (site or "").lower().strip())


def page_title(root, extracted: str | None, site: str | None = None) -> str:
    """The title to keep (see the module's docstring); '' when the page has none."""
    title = clean_title(extracted)
    heading = main_heading(root)
    if heading and _specific(heading, site) and " ".join(words(heading)) not in " ".join(words(title)):
        return heading
    return title


def _is_byline(el) -> bool:
    if el.tag == "time":
        return True
    names = f"{el.get('class') or ''} {el.get('id') or ''} {el.get('itemprop') or ''} {el.get('rel') or ''}"
    tokens = set(re.split(r"[\s_\-]+", names.lower())) - {""}
    return bool(tokens & BYLINE_WORDS) and len(words(el.text_content())) <= MAX_BYLINE_WORDS


def _in_code(el) -> bool:
    return any(a.tag in CODE for a in el.iterancestors())


def dating_copy(root):
    """A new document of `root`'s <head> and its bylines and <time> elements (none inside code)."""
    doc = lxml_html.document_fromstring("<html><head></head><body></body></html>")
    head = root.find("head")
    if head is not None:
        doc.replace(doc.find("head"), copy.deepcopy(head))
    body = doc.find("body")
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag not in CODE and _is_byline(el) and not _in_code(el):
            clone = copy.deepcopy(el)
            clone.tail = None
            for code in clone.xpath(".//" + "|.//".join(CODE)):
                code.drop_tree()
            body.append(clone)
    return doc


def page_date(root, url: str | None) -> str | None:
    """YYYY-MM-DD from the page's metadata or byline (see the module's docstring), else None."""
    from htmldate import find_date

    try:
        return find_date(dating_copy(root), url=url, extensive_search=False, original_date=True)
    except (ValueError, TypeError):  # htmldate on a page it cannot read: no date rather than a failed capture
        return None
