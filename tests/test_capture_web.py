"""Capture from the web (core/capture/web.py): real pages from tests/web_pages/ served by a threaded
http.server on 127.0.0.1, a real SQLite file, the real `cairn` binary, the real tool runner, the MCP
server over stdio and the app's quick capture through Pilot. Nothing here reaches the internet."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import socket
import subprocess
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from chat_support import anth, anthropic_provider, config, new_chat, searcher, send, _no_proxies  # noqa: F401  (fixtures)
from core.agent import profiles
from core.agent.egress import Egress
from core.agent.tools import ToolContext, ToolError, ToolRunner
from core.capture import web
from core.capture.web import CaptureError
from core.graph.store import Store
from fakes import text, tool_call

PAGES = Path(__file__).parent / "web_pages"
GOLD = json.loads((PAGES / "gold.json").read_text(encoding="utf-8"))
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n" + bytes(range(256)) * 8 + b"\n%%EOF\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(200))

# path -> (status, headers, body); the handler below adds the special routes.
ROUTES: dict[str, tuple[int, dict[str, str], bytes]] = {
    "/2024/03/starter-smell": (200, {"Content-Type": "text/html; charset=utf-8"}, (PAGES / "article.html").read_bytes()),
    "/de/strassenbahn": (200, {"Content-Type": "text/html; charset=utf-8"}, (PAGES / "german.html").read_bytes()),
    "/ja/machiya": (200, {"Content-Type": "text/html"}, (PAGES / "japanese.html").read_bytes()),  # <meta charset> only
    "/fr/citron": (200, {"Content-Type": "text/html; charset=ISO-8859-1"}, (PAGES / "latin1.html").read_bytes()),
    "/docs/backup": (200, {"Content-Type": "application/xhtml+xml; charset=utf-8"}, (PAGES / "docs.html").read_bytes()),
    "/app": (200, {"Content-Type": "text/html; charset=utf-8"}, (PAGES / "nav_only.html").read_bytes()),
    "/blank": (200, {"Content-Type": "text/html"}, b""),
    "/report.pdf": (200, {"Content-Type": "application/pdf"}, PDF),
    "/photo.png": (200, {"Content-Type": "image/png"}, PNG),
    "/untyped": (200, {}, (PAGES / "article.html").read_bytes()),
    "/broken-bytes": (200, {"Content-Type": "text/html; charset=utf-8"},
                      (PAGES / "article.html").read_bytes().replace(b"Every baker", b"Every \xff\xfe baker")),
    "/gone": (404, {"Content-Type": "text/html"}, b"<html><body><h1>Not found</h1><nav>Home</nav></body></html>"),
    "/down": (503, {"Content-Type": "text/html"}, b"<html><body>Maintenance</body></html>"),
    "/old-home": (301, {"Location": "/r2"}, b""),
    "/r2": (302, {"Location": "/r3#top"}, b""),
    "/r3": (307, {"Location": "/2024/03/starter-smell"}, b""),
    "/to-ftp": (302, {"Location": "ftp://127.0.0.1/file.txt"}, b""),
    "/nowhere": (302, {}, b""),
}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict] = []  # the requests, for asserting what Cairn sent

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        Handler.seen.append({"path": self.path, "user_agent": self.headers.get("User-Agent")})
        path = self.path
        if path.startswith("/loop/"):  # /loop/N redirects to /loop/N+1 for ever
            self._send(302, {"Location": f"/loop/{int(path.rsplit('/', 1)[1]) + 1}"}, b"")
        elif path == "/huge":  # an endless HTML stream with no Content-Length
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                self.wfile.write(b"<html><body>")
                for _ in range(2_000):
                    self.wfile.write(b"<p>" + b"filler text " * 5_000 + b"</p>")
            except (BrokenPipeError, ConnectionResetError):
                pass  # Cairn stopped reading at its cap, as it should
        elif path == "/huge-declared":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(50_000_000))
            self.end_headers()
        elif path == "/slow":
            time.sleep(3)
            self._send(200, {"Content-Type": "text/html"}, (PAGES / "article.html").read_bytes())
        elif path == "/gzipped":
            self._send(200, {"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"},
                       gzip.compress((PAGES / "docs.html").read_bytes()))
        elif path in ROUTES:
            self._send(*ROUTES[path])
        else:
            self._send(404, {"Content-Type": "text/plain"}, b"no such page")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # the /slow handler may still sleep when a test ends


@pytest.fixture(scope="module")
def site():
    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def gold(page: str) -> dict:
    return GOLD[page]


def norm(text: str) -> str:
    return " ".join(text.split())


def count(db_path) -> int:
    with Store(db_path, readonly=True) as s:
        return s.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]


def refused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- fetch and extract ------------------------------------------------------------------------------
def test_an_article_keeps_its_text_and_metadata_and_drops_nav_ads_and_comments(site, store):
    result = web.capture(store, site + "/2024/03/starter-smell")
    node = result.node
    spec = gold("article.html")
    body = norm(node["source"])
    assert all(norm(s) in body for s in spec["article"])
    leaked = [s for s in spec["boilerplate"] if norm(s) in body]
    assert leaked == []
    assert "## What the microbes are telling you" in node["source"]  # headings kept as markdown
    assert node["title"] == "Why Sourdough Starters Smell Like Nail Polish"
    assert node["link"] == site + "/2024/03/starter-smell"
    assert node["event_date"] == "2024-03-14"
    assert node["description"].startswith("A hungry starter makes acetone-like esters")
    assert node["chunk_status"] == "pending"  # indexed later, like every new node
    meta = json.loads(store.db.execute("SELECT metadata FROM nodes WHERE id = ?", (node["id"],)).fetchone()[0])
    cap = meta["capture"]
    assert cap["url"] == cap["final_url"] == node["link"]
    assert (cap["author"], cap["site"], cap["date"]) == ("Mara Lindqvist", "The Crumb Journal", "2024-03-14")
    assert cap["extractor"].startswith("trafilatura 2.")
    assert cap["fetched_at"].endswith("Z")
    assert Handler.seen[-1]["user_agent"].startswith("Cairn/")


@pytest.mark.parametrize("path, page", [("/de/strassenbahn", "german.html"), ("/ja/machiya", "japanese.html"),
                                        ("/fr/citron", "latin1.html"), ("/docs/backup", "docs.html"),
                                        ("/gzipped", "docs.html")])
def test_pages_in_other_languages_and_charsets_come_out_as_written(site, path, page):
    found = web.extract(web.fetch(site + path))
    spec = gold(page)
    assert all(norm(s) in norm(found.text) for s in spec["article"])
    assert [s for s in spec["boilerplate"] if norm(s) in norm(found.text)] == []
    assert found.title == spec["meta"]["title"]
    assert found.date == spec["meta"]["date"]
    assert found.site == spec["meta"]["site"]
    assert "\ufffd" not in found.text


def test_a_page_labelled_latin1_is_read_as_windows_1252_like_browsers(site):
    page = web.fetch(site + "/fr/citron")
    assert page.charset == "cp1252"
    found = web.extract(page)
    assert found.author == "Hélène Dubœuf"  # œ is 0x9c: in windows-1252, not in ISO-8859-1
    assert "pressés cette année" in found.text


def test_bytes_invalid_in_the_charset_are_replaced_not_fatal(site):
    found = web.extract(web.fetch(site + "/broken-bytes"))
    assert "Every \ufffd\ufffd baker" in found.text


def test_a_page_with_no_content_type_is_taken_when_it_looks_like_html(site):
    assert web.fetch(site + "/untyped").content_type == "text/html"


def test_a_redirect_chain_ends_at_the_article_and_the_node_links_there(site, store):
    result = web.capture(store, site + "/old-home")
    assert result.page.redirects == (site + "/r2", site + "/r3", site + "/2024/03/starter-smell")
    assert result.node["link"] == site + "/2024/03/starter-smell"
    assert result.capture["url"] == site + "/old-home"


def test_too_many_redirects_say_where_they_ended(site, store):
    with pytest.raises(CaptureError) as err:
        web.capture(store, site + "/loop/0")
    assert err.value.kind == "redirects"
    assert str(err.value) == (f"{site}/loop/0 redirects more than 5 times (the last hop led to {site}/loop/6); "
                              "stopped there.")
    assert store.counts()["nodes"] == 0


def test_a_redirect_off_the_web_or_to_nowhere_is_refused(site):
    with pytest.raises(CaptureError, match=r"redirects to 'ftp://127\.0\.0\.1/file\.txt', which cannot be captured: "
                                           r"Only http:// and https:// pages can be captured"):
        web.fetch(site + "/to-ftp")
    with pytest.raises(CaptureError, match=r"/nowhere redirects \(HTTP 302\) without saying where to\."):
        web.fetch(site + "/nowhere")


@pytest.mark.parametrize("path, kind, sentence", [
    ("/gone", "status", "There is no page at {site}/gone (HTTP 404 Not Found)."),
    ("/down", "status", "The server at 127.0.0.1:{port} failed (HTTP 503 Service Unavailable); try again later."),
    ("/report.pdf", "not_html", "{site}/report.pdf is not a web page (application/pdf); to capture a PDF, save it "
                                "and use cairn add FILE."),
    ("/photo.png", "not_html", "{site}/photo.png is not a web page (image/png); Cairn captures web pages (HTML) only."),
    ("/app", "empty", "Found no article text on {site}/app: the page may be built by JavaScript, or hold only "
                      "navigation. Nothing was saved."),
    ("/blank", "empty", "Found no article text on {site}/blank: the page may be built by JavaScript, or hold only "
                        "navigation. Nothing was saved."),
    ("/huge-declared", "too_large", "The page at {site}/huge-declared is larger than the 10 MB limit (it says 50.0 MB); "
                                    "nothing was saved."),
])
def test_each_failure_has_its_own_sentence_and_writes_nothing(site, store, path, kind, sentence):
    with pytest.raises(CaptureError) as err:
        web.capture(store, site + path)
    assert err.value.kind == kind
    assert str(err.value) == sentence.format(site=site, port=site.rsplit(":", 1)[1])
    assert store.counts()["nodes"] == 0


def test_a_body_streaming_past_the_cap_is_cut_off(site, store):
    with pytest.raises(CaptureError) as err:
        web.capture(store, site + "/huge", max_bytes=1_000_000)
    assert err.value.kind == "too_large"
    assert str(err.value) == f"The page at {site}/huge is larger than the 1 MB limit; nothing was saved."
    assert store.counts()["nodes"] == 0


def test_a_server_slower_than_the_timeout(site, store):
    with pytest.raises(CaptureError) as err:
        web.capture(store, site + "/slow", timeout=0.3)
    assert err.value.kind == "timeout"
    assert str(err.value) == f"127.0.0.1:{site.rsplit(':', 1)[1]} did not answer within 0.3 s; try again later."
    assert store.counts()["nodes"] == 0


def test_a_refused_connection(store):
    port = refused_port()
    with pytest.raises(CaptureError) as err:
        web.capture(store, f"http://127.0.0.1:{port}/page")
    assert err.value.kind == "refused"
    assert str(err.value) == f"127.0.0.1:{port} refused the connection: no web server answers at that address."


def test_offline_and_dns_failures_are_told_apart():
    """A failed name lookup (the usual sign of being offline) as urllib reports it; looking a name up
    for real would ask a DNS server, which a test must not."""
    from urllib.error import URLError

    err = web._network_error(URLError(socket.gaierror(-3, "Temporary failure in name resolution")),
                             "https://news.example.org/a", 10)
    assert (err.kind, str(err)) == ("offline", "Could not look up news.example.org: you may be offline, or the "
                                               "name is misspelt.")
    err = web._network_error(URLError(OSError(101, "Network is unreachable")), "https://news.example.org/a", 10)
    assert (err.kind, str(err)) == ("offline", "Cannot reach news.example.org: the network is unreachable "
                                               "(are you offline?).")


@pytest.mark.parametrize("url, sentence", [
    ("", "No address given: pass the page's URL, such as https://example.com/article."),
    ("ftp://example.com/x", "Only http:// and https:// pages can be captured; 'ftp://example.com/x' is ftp:."),
    ("file:///etc/passwd", "Only http:// and https:// pages can be captured; 'file:///etc/passwd' is file:."),
    ("https://user:pw@example.com/", "An address with a user name or password in it is not captured; remove the "
                                     "part before @."),
    ("http://", "'http://' names no host; a web address looks like https://example.com/page."),
])
def test_addresses_that_cannot_be_captured(url, sentence):
    with pytest.raises(CaptureError) as err:
        web.normalise_url(url)
    assert (err.value.kind, str(err.value)) == ("bad_url", sentence)


def test_addresses_are_normalised():
    assert web.normalise_url(" example.com/a b ") == "https://example.com/a%20b"
    assert web.normalise_url("http://bücher.example/x#part") == "http://xn--bcher-kva.example/x"
    assert web.normalise_url("HTTP://127.0.0.1:8080") == "http://127.0.0.1:8080/"


def test_real_dates_only():
    assert web.real_date("2024-02-29") == "2024-02-29"
    assert web.real_date("2023-02-29") is None
    assert web.real_date("2024-03") is None
    assert web.real_date("2999-01-01") is None  # a date in the future is a guess gone wrong


# -- structure, titles and dates on pages shaped like documentation generators' (issue 24, item 4) ----
PROSE = ("This paragraph is here so the page reads as an article: it explains, in full sentences, what the "
         "section is for and how a reader would use it in practice, with enough words to be judged text.")


def page_of(html: str, url: str = "https://docs.example.org/manual/page.html") -> web.Page:
    return web.Page(url=url, final_url=url, redirects=(), content_type="text/html", charset="utf-8", html=html,
                    size=len(html))


def doc(head: str, body: str) -> str:
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'>{head}</head><body>{body}</body></html>"


SPHINX = doc("<title>Installing Gizmo — Gizmo 1.2 documentation</title>", f"""
<div class="document"><div class="documentwrapper"><div class="bodywrapper">
<div class="body" role="main"><section id="installing-gizmo">
<h1>Installing Gizmo<a class="headerlink" href="#installing-gizmo" title="Permalink to this heading">¶</a></h1>
<p>{PROSE}</p>
<section id="requirements"><h2>Requirements<a class="headerlink" href="#requirements">¶</a></h2>
<p>{PROSE}</p>
<ul><li><p>A Python interpreter</p>
  <ul><li><p>version 3.11 or later</p></li><li><p>with the venv module</p></li></ul></li>
<li><p>A C compiler for the optional speedups</p></li></ul>
<div class="highlight-console notranslate"><div class="highlight"><pre><span></span><span class="gp">$ </span>python -m venv env
<span class="gp">$ </span>env/bin/pip install gizmo
</pre></div></div>
<p>{PROSE}</p>
</section></section></div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="main navigation"><div class="sphinxsidebarwrapper">
<h3>Navigation</h3><ul><li><a href="index.html">Sidebar link to the front page of Gizmo</a></li>
<li><a href="api.html">Sidebar link to the API reference</a></li></ul>
<div id="searchbox" role="search"><form action="search.html"><input type="text" name="q"></form></div>
</div></div></div>
<div class="footer">&copy;Copyright 2024, the Gizmo authors. Created using Sphinx.</div>""")


def test_a_sphinx_page_keeps_headings_nested_lists_and_code_and_its_title_has_no_pilcrow():
    found = web.extract(page_of(SPHINX))
    assert found.title == "Installing Gizmo"  # the h1, without its ¶ (trafilatura drops the site's suffix)
    assert "¶" not in found.title and "¶" not in found.text
    assert "## Requirements" in found.text
    assert "- A Python interpreter\n  - version 3.11 or later\n  - with the venv module" in found.text
    assert "```\n$ python -m venv env\n$ env/bin/pip install gizmo\n```" in found.text
    assert "Sidebar link" not in found.text and "Created using Sphinx" not in found.text


DOXYGEN = doc("<title>Widgets: Widget API</title><meta name='generator' content='Doxygen 1.9.4'>", f"""
<div id="top"><div id="titlearea"><table><tr><td><div id="projectname">Widgets</div></td></tr></table></div></div>
<div id="nav-path" class="navpath"><ul><li class="navelem"><a href="modules.html">Modules</a></li></ul></div>
<div class="header"><div class="summary"><a href="#func-members">Functions</a></div>
<div class="headertitle"><div class="title">Widget API</div></div></div>
<div class="contents">
<p>{PROSE}</p>
<table class="memberdecls">
<tr class="heading"><td colspan="2"><h2 class="groupheader"><a id="func-members"></a>Functions</h2></td></tr>
<tr class="memitem:ga1"><td class="memItemLeft" align="right">int&#160;</td>
<td class="memItemRight"><a href="#ga1">widget_open</a> (const char *name, int flags)</td></tr>
<tr class="memdesc:ga1"><td class="mdescLeft">&#160;</td><td class="mdescRight">Opens a widget by name. </td></tr>
</table>
<h2 class="groupheader">Function Documentation</h2>
<a id="ga1"></a>
<h2 class="memtitle"><span class="permalink"><a href="#ga1">&#9670;&#160;</a></span>widget_open()</h2>
<div class="memitem"><div class="memproto"><table class="memname"><tr>
<td class="memname">int widget_open </td><td>(</td><td class="paramtype">const char *&#160;</td>
<td class="paramname"><em>name</em>, </td></tr></table></div>
<div class="memdoc"><p>Opens the widget called <em>name</em> and returns a handle to it for later calls.</p>
<dl class="section return"><dt>Returns</dt><dd>a handle on success, or a negative error code </dd></dl>
<div class="fragment"><div class="line"><span class="keywordtype">int</span> h = widget_open(<span class="stringliteral">"dial"</span>, 0);</div>
<div class="line"><span class="keywordflow">if</span> (h &lt; 0) <span class="keywordflow">return</span> h;</div></div>
</div></div></div>
<hr class="footer"/><address class="footer"><small>Generated by doxygen 1.9.4</small></address>""")


def test_a_doxygen_page_keeps_prototypes_member_headings_and_returns_and_is_titled_by_its_own_heading():
    found = web.extract(page_of(DOXYGEN))
    assert found.title == "Widget API"  # not the member name trafilatura finds first, nor its ◆
    assert "## Functions" in found.text
    assert "## widget_open()" in found.text and "◆" not in found.text
    assert "int widget_open ( const char * *name*," in found.text  # the prototype, on one line
    assert "int widget_open (const char *name, int flags)" in " ".join(found.text.split())  # the summary row
    assert "Returns\n\na handle on success, or a negative error code" in found.text
    assert '```\nint h = widget_open("dial", 0);\nif (h < 0) return h;\n```' in found.text
    assert "Modules" not in found.text


TEXINFO = doc("<title>Gizmo Manual: 3. Files</title><meta name='Generator' content='texi2html 1.78a'>", f"""
<table cellpadding="1" cellspacing="1" border="0"><tr>
<td valign="middle" align="left">[<a href="g_2.html#SEC7" title="Previous chapter"> &lt;&lt; </a>]</td>
<td valign="middle" align="left">[<a href="g_4.html#SEC9" title="Next chapter"> &gt;&gt; </a>]</td>
<td valign="middle" align="left">[<a href="g_toc.html#SEC_Top" title="Cover (top) of document">Top</a>]</td>
</tr></table>
<hr size="2">
<h1 class="chapter"> <a href="g_toc.html#TOC3">3. Files</a> </h1>
<p>{PROSE}</p>
<ul><li> The <em>config</em> file, read first.</li><li> The <em>state</em> file, written last.</li></ul>
<table><tr><td>&nbsp;</td><td><pre class="example">gizmo --config ~/.gizmorc
gizmo --state /var/lib/gizmo
</pre></td></tr></table>
<h2 class="section"> <a href="g_toc.html#TOC4">3.1 Locking</a> </h2>
<p>{PROSE}</p>
<table cellpadding="1" cellspacing="1" border="0"><tr>
<td valign="middle" align="left">[<a href="g_2.html#SEC7" title="Previous chapter"> &lt;&lt; </a>]</td>
<td valign="middle" align="left">[<a href="g_4.html#SEC9" title="Next chapter"> &gt;&gt; </a>]</td>
</tr></table>""")


def test_a_texinfo_page_keeps_its_headings_lists_and_examples_without_its_navigation_panels():
    found = web.extract(page_of(TEXINFO))
    assert "# 3. Files" in found.text or found.title.endswith("3. Files")
    assert "## 3.1 Locking" in found.text
    assert "- The *config* file, read first.\n- The *state* file, written last." in found.text
    assert "```\ngizmo --config ~/.gizmorc\ngizmo --state /var/lib/gizmo\n```" in found.text
    assert "<<" not in found.text and ">>" not in found.text and "[" not in found.text


SQLITE = doc("<title>Gizmo Database</title>", f"""
<div class="nosearch"><div class="menu mainmenu"><ul><li><a href="index.html">Home</a></li>
<li><a href="about.html">About</a></li><li><a href="docs.html">Documentation</a></li></ul></div></div>
<div class="fancy"><div class="nosearch"><div class="fancy_title">Checkpoints In Gizmo</div>
<div class="fancy_toc"><a onclick="toggle_toc()">Table Of Contents</a><div id="toc_sub">
<div class="fancy-toc1"><a href="#intro">1. Introduction</a></div></div></div></div>
<h1 id="intro"><span>1. </span>Introduction</h1>
<p>{PROSE}</p>
<ol><li><p>Stop the writers, then run:</p>
<div class="codeblock"><pre>PRAGMA wal_checkpoint(TRUNCATE);
PRAGMA journal_mode;
</pre></div></li>
<li><p>Copy the database file while nothing writes to it.</p></li></ol>
<table border="1"><tr><th>Mode</th><th>Blocks writers</th></tr>
<tr><td>PASSIVE</td><td>no</td></tr><tr><td>TRUNCATE</td><td>yes</td></tr></table>
<p>{PROSE}</p></div>""")


def test_a_hand_written_site_keeps_headings_lists_tables_and_code_inside_a_list_with_its_line_breaks():
    found = web.extract(page_of(SQLITE))
    assert found.title == "1. Introduction"  # <title> is the site's banner; the page's own h1 instead
    assert "Home" not in found.text and "Table Of Contents" not in found.text
    assert "1. Stop the writers, then run:\n\n   ```\n   PRAGMA wal_checkpoint(TRUNCATE);\n   PRAGMA journal_mode;\n" \
           "   ```\n2. Copy the database file while nothing writes to it." in found.text
    assert "| Mode | Blocks writers |\n|---|---|\n| PASSIVE | no |\n| TRUNCATE | yes |" in found.text


def chapter(heading: str) -> str:
    return doc("<title>The Acme Handbook</title>", f"<div class='banner'>The Acme Handbook</div>"
                                                     f"<article><h1>{heading}</h1><p>{PROSE}</p><p>{PROSE}</p></article>")


def test_a_site_banner_title_gives_way_to_each_chapters_own_heading():
    assert web.extract(page_of(chapter("Shipping and returns"))).title == "Shipping and returns"
    assert web.extract(page_of(chapter("Paying by card"))).title == "Paying by card"
    assert web.extract(page_of(chapter("The Acme Handbook"))).title == "The Acme Handbook"  # its own heading
    markup = doc("<title>&lt;b&gt;Widgets&lt;/b&gt; ¶</title>", f"<article><p>{PROSE}</p><p>{PROSE}</p></article>")
    assert web.extract(page_of(markup)).title == "Widgets"


LOG = "<pre>2010-12-12 10:14:02 gizmod[311]: started\n2010-12-12 10:14:03 gizmod[311]: listening on :80\n</pre>"


def test_a_date_comes_from_metadata_or_a_byline_never_from_code_or_examples():
    bare = doc("<title>Reading the log</title>", f"<article><h1>Reading the log</h1><p>{PROSE}</p>{LOG}"
                                                 f"<p>{PROSE}</p><p>Dates like <code>2011-01-02</code> too.</p></article>")
    assert web.extract(page_of(bare)).date is None
    meta = bare.replace("<title>", "<meta property='article:published_time' content='2023-05-06T10:00:00Z'><title>")
    assert web.extract(page_of(meta)).date == "2023-05-06"
    byline = bare.replace("<h1>Reading the log</h1>", "<h1>Reading the log</h1><p class='byline'>Posted on 15 January 2022</p>")
    assert web.extract(page_of(byline)).date == "2022-01-15"
    timed = bare.replace("<h1>Reading the log</h1>", "<h1>Reading the log</h1><time datetime='2021-09-30'>last autumn</time>")
    assert web.extract(page_of(timed)).date == "2021-09-30"


# -- duplicates -------------------------------------------------------------------------------------
def test_an_address_captured_before_names_its_node_instead_of_a_duplicate(site, store):
    first = web.capture(store, site + "/2024/03/starter-smell")
    fetches = len(Handler.seen)
    again = web.capture(store, site + "/2024/03/starter-smell")
    assert again.existing and again.node["id"] == first.node["id"]
    assert len(Handler.seen) == fetches  # known as asked: not even fetched
    via_redirect = web.capture(store, site + "/old-home")  # ends at the same final URL
    assert via_redirect.existing and via_redirect.node["id"] == first.node["id"]
    forced = web.capture(store, site + "/2024/03/starter-smell", again=True)
    assert not forced.existing and forced.node["id"] != first.node["id"]
    assert store.counts()["nodes"] == 2


# -- the command line -------------------------------------------------------------------------------
def _cli_env(cli_env: dict) -> dict:
    env = dict(cli_env)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(var, None)
    return env


def test_cairn_add_url_end_to_end(site, cairn_cmd, cli_env, tmp_path):
    db = tmp_path / "cli.db"
    env = _cli_env(cli_env)

    def run(*args):
        return subprocess.run([*cairn_cmd, "--db", str(db), *args], capture_output=True, text=True, env=env,
                              timeout=120)

    done = run("add", "--url", site + "/de/strassenbahn", "-d", "verkehr")
    assert done.returncode == 0, done.stderr
    node_id = int(done.stdout.strip())
    assert "Captured 'Warum die Straßenbahn in Freiburg nachts leiser fährt'" in done.stderr
    assert "Jürgen Weiß · Stadtblatt Freiburg · 2023-11-02" in done.stderr
    shown = json.loads(run("show", str(node_id), "--json").stdout)
    assert shown["link"] == site + "/de/strassenbahn" and shown["dimensions"] == ["verkehr"]
    assert "Zusätzlich gilt zwischen Mitternacht" in shown["source"]
    assert shown["event_date"] == "2023-11-02"

    twice = run("add", "--url", site + "/de/strassenbahn")
    assert twice.returncode == 0 and twice.stdout.strip() == str(node_id)
    assert f"was captured before as node {node_id}" in twice.stderr and "--again" in twice.stderr

    as_json = json.loads(run("add", "--url", site + "/de/strassenbahn", "--again", "--json").stdout)
    assert as_json["already_captured"] is False and as_json["id"] != node_id

    failed = run("add", "--url", site + "/report.pdf")
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr == (f"cairn: {site}/report.pdf is not a web page (application/pdf); to capture a PDF, "
                             "save it and use cairn add FILE.\n")
    both = run("add", "some text", "--url", site + "/de/strassenbahn")
    assert both.returncode == 1 and "leave out TEXT" in both.stderr
    assert count(db) == 2


# -- the chat's tool and the MCP tool -------------------------------------------------------------------
def test_capture_url_is_appended_to_the_writing_agents_tools():
    assert profiles.ALL_TOOLS[-1] == "captureUrl"
    for name in ("orchestrator", "easy", "worker"):
        assert "captureUrl" in profiles.get(name).tools
    assert "captureUrl" not in profiles.get("planner").tools


def test_the_tool_runner_captures_without_confirmation_and_reports_failures(site, store):
    def never(action, detail):
        raise AssertionError("captureUrl asked for confirmation")

    # The fixtures are served on 127.0.0.1: the model may fetch there only with [capture] local_addresses;
    # the addresses are the user's (core/agent/egress.py), so nothing is asked.
    said = f"save {site}/ja/machiya and {site}/gone and {site}/de/strassenbahn"
    ctx = ToolContext(store, searcher=None, confirm=never, local_addresses=True, egress=Egress(user_texts=[said]))
    runner = ToolRunner(ctx, profiles.ALL_TOOLS)
    out = runner.run("captureUrl", {"url": site + "/ja/machiya", "dimensions": ["京都"]})
    node = store.get_node(out["created"]["id"])
    assert node["title"] == "京都の町家が宿泊施設として再生される理由" and node["dimensions"] == ["京都"]
    assert out["capture"]["final_url"] == site + "/ja/machiya" and ctx.created == [node["id"]]
    via = store.db.execute("SELECT json_extract(metadata, '$.created_via') FROM nodes WHERE id = ?", (node["id"],))
    assert via.fetchone()[0] == "model"
    again = runner.run("captureUrl", {"url": site + "/ja/machiya"})
    assert again["already_captured"]["id"] == node["id"] and "captured before" in again["note"]
    with pytest.raises(ToolError, match=r"^There is no page at .*/gone \(HTTP 404 Not Found\)\.$"):
        runner.run("captureUrl", {"url": site + "/gone"})
    with pytest.raises(ToolError, match=r"^dimensions must be a list of dimension names \(strings\)\.$"):
        runner.run("captureUrl", {"url": site + "/de/strassenbahn", "dimensions": "travel"})
    assert store.counts()["nodes"] == 1


def test_the_model_may_not_reach_this_machine_or_its_network_unless_allowed(site, store):
    """A prompt-injected model must not read internal pages or a cloud's metadata service through
    captureUrl: loopback, private and link-local hosts are refused, also at a redirect's end."""
    urls = (site + "/ja/machiya", "http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/wiki", "http://[::1]/admin")
    # even addresses the user wrote (the egress rule lets them through): the local-network rule still holds
    runner = ToolRunner(ToolContext(store, searcher=None, egress=Egress(user_texts=[" ".join(urls)])), profiles.ALL_TOOLS)
    for url in urls:
        with pytest.raises(ToolError, match=r"is an address on this machine or its local network .*"
                                            r"\[capture\] local_addresses = true\.$"):
            runner.run("captureUrl", {"url": url})
    assert store.counts()["nodes"] == 0
    from core.capture import web

    with pytest.raises(web.CaptureError, match="local network"):  # a public address is let through to the hop
        web.refuse_local("http://127.0.0.1:1/")
    web.refuse_local("http://93.184.215.14/")  # a public address: no refusal (nothing is fetched here)


def test_the_model_captures_a_page_in_a_chat(site, store, searcher, anth):
    cfg = config()
    cfg.capture.local_addresses = True  # the fixture server is on 127.0.0.1
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    anth.script.add(text("Saving the page."), tool_call("captureUrl", {"url": site + "/docs/backup"}))
    anth.script.add(text("Saved."))
    send(chat, f"Keep this article: {site}/docs/backup")
    reply = chat.last_reply
    assert reply.status == "complete" and len(reply.created_nodes) == 1
    node = store.get_node(reply.created_nodes[0])
    assert node["title"] == "Backing up a SQLite database while it is in use" and node["link"] == site + "/docs/backup"
    assert anth.requests[0].body["tools"][-1]["name"] == "captureUrl"


@asynccontextmanager
async def mcp_session(cairn_cmd, db: Path, errlog: Path):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=cairn_cmd[0], args=[*cairn_cmd[1:], "mcp", "--db", str(db)],
                                   env={"CAIRN_HOME": os.environ["CAIRN_HOME"], "HOME": os.environ["HOME"]})
    with open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                yield session


async def test_the_mcp_server_captures_a_page(site, cairn_cmd, tmp_path):
    from core import config as config_module

    db = tmp_path / "mcp.db"
    Store(db).close()
    async with mcp_session(cairn_cmd, db, tmp_path / "err.log") as session:
        tool = {t.name: t for t in (await session.list_tools()).tools}["captureUrl"]
        local = await session.call_tool("captureUrl", {"url": site + "/fr/citron"})
        assert local.is_error and "local network" in local.content[0].text  # 127.0.0.1: refused by default
        config_module.set_value("capture.local_addresses", True)  # $CAIRN_HOME/config.toml, read at each call
        assert tool.input_schema["properties"]["url"]["maxLength"] == 4000
        assert tool.annotations.open_world_hint is True and tool.annotations.destructive_hint is False
        result = await session.call_tool("captureUrl", {"url": site + "/fr/citron"})
        assert not result.is_error, result.content[0].text
        created = json.loads(result.content[0].text)["created"]
        assert created["title"] == "La fête du citron à Menton attire un public record"
        bad = await session.call_tool("captureUrl", {"url": site + "/photo.png"})
        assert bad.is_error and bad.content[0].text.endswith("is not a web page (image/png); Cairn captures web "
                                                             "pages (HTML) only.")
        unknown = await session.call_tool("captureUrl", {"url": site + "/fr/citron", "colour": "red"})
        assert unknown.is_error and "does not take colour" in unknown.content[0].text
    with Store(db, readonly=True) as check:
        node = check.get_node(created["id"])
        assert node["link"] == site + "/fr/citron"
        via = check.db.execute("SELECT json_extract(metadata, '$.created_via') FROM nodes").fetchone()[0]
        assert via == "mcp"
    assert count(db) == 1


# -- quick capture in the app -----------------------------------------------------------------------
async def _wait(pilot, condition, what: str) -> None:
    from tui_support import wait_for

    await wait_for(pilot, condition, what=what)


async def test_quick_capture_saves_a_web_page_typed_as_the_whole_capture(site, store, db_path, monkeypatch):
    from tui.app import CairnApp
    from tui.screens.quick_capture import QuickCapture

    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+n")
        await _wait(pilot, lambda: isinstance(app.screen, QuickCapture), "the quick capture modal")
        modal = app.screen
        # a 404: its sentence inline, the modal stays with the address typed
        modal.query_one("#capture-link").value = site + "/gone"
        await pilot.press("ctrl+s")
        await _wait(pilot, lambda: "There is no page at" in str(modal.query_one("#capture-error").render()),
                    "the 404 sentence")
        assert app.screen is modal and modal.values()["link"] == site + "/gone"
        # the address alone in the title field: the page is fetched and saved
        modal.query_one("#capture-link").value = ""
        modal.query_one("#capture-title").value = site + "/2024/03/starter-smell"
        modal.query_one("#capture-dimensions").value = "baking"
        await pilot.press("ctrl+s")
        await _wait(pilot, lambda: not isinstance(app.screen, QuickCapture), "the modal to close")
    with Store(db_path, readonly=True) as check:
        node = check.recent(1)[0]
    assert node["title"] == "Why Sourdough Starters Smell Like Nail Polish"
    assert node["link"] == site + "/2024/03/starter-smell" and node["dimensions"] == ["baking"]
    assert "Ethyl acetate is the most common of them" in check_source(db_path, node["id"])


def check_source(db_path, node_id: int) -> str:
    with Store(db_path, readonly=True) as s:
        return s.get_node(node_id)["source"]


async def test_quick_capture_shows_progress_and_escape_stops_without_saving(site, store, db_path, monkeypatch):
    from tui.app import CairnApp
    from tui.screens.quick_capture import QuickCapture

    ended, outcome, real_capture = threading.Event(), [], web.capture

    def watched_capture(*args, **kwargs):  # the real capture, telling the test how it ended
        try:
            return real_capture(*args, **kwargs)
        except BaseException as exc:
            outcome.append(type(exc).__name__)
            raise
        finally:
            ended.set()

    monkeypatch.setattr(web, "capture", watched_capture)
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+n")
        await _wait(pilot, lambda: isinstance(app.screen, QuickCapture), "the quick capture modal")
        modal = app.screen
        modal.query_one("#capture-link").value = site + "/slow"  # answers after 3 s
        await pilot.press("ctrl+s")
        await _wait(pilot, lambda: "esc stops" in str(modal.query_one("#capture-hint").render()), "the progress line")
        assert "127.0.0.1" in str(modal.query_one("#capture-hint").render())  # fetching / connecting to the host
        await pilot.press("escape")  # one escape: the fetch stops, nothing is written
        await _wait(pilot, lambda: not isinstance(app.screen, QuickCapture), "the modal to close")
        # The worker's thread cannot be interrupted mid-request: the page arrives, and is dropped.
        await _wait(pilot, lambda: ended.is_set(), "the stopped capture to end")
    assert outcome == ["_Stopped"]
    assert count(db_path) == 0


async def test_quick_capture_names_the_node_a_page_was_captured_as(site, store, db_path, monkeypatch):
    from tui.app import CairnApp
    from tui.screens.quick_capture import QuickCapture

    first = web.capture(store, site + "/de/strassenbahn").node
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    notes: list[str] = []
    app = CairnApp(db_path, first_run_prompt=False)
    monkeypatch.setattr(app, "notify", lambda message, **kw: notes.append(message))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+n")
        await _wait(pilot, lambda: isinstance(app.screen, QuickCapture), "the quick capture modal")
        app.screen.query_one("#capture-body").text = site + "/de/strassenbahn\n"
        await pilot.press("ctrl+s")
        await _wait(pilot, lambda: not isinstance(app.screen, QuickCapture), "the modal to close")
    assert any(f"was captured before as node {first['id']}" in n for n in notes), notes
    assert count(db_path) == 1
