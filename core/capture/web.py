"""Capture from the web: fetch the page a user names, keep its main text and metadata, store it as a node.

`fetch` gets the page (http/https only, a connect/read timeout and an overall deadline that a
watchdog enforces even on a server trickling a byte at a time, a size cap read in pieces, at most 5
redirects followed one by one, HTML only, the charset from the header or the page with bad bytes
replaced); `extract` keeps the article and its title, author, date and site
with trafilatura (bench/extract.py measured it against readability-lxml); `capture` does both and
only then writes the node in one `Store.add_node` transaction, so a failure leaves nothing behind.
Every failure is a `CaptureError` whose message is one sentence; its `kind` names the failure.

The model's `captureUrl` tool (core/agent/tools.py, a layer above) calls `capture` with its origin.
"""

from __future__ import annotations

import codecs
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any, Callable

from core import clock
from core.errors import CairnError
from core.graph import provenance

DEFAULT_TIMEOUT = 10.0  # seconds, for connecting and for each read
# Seconds for the whole fetch (connecting, headers, body, every redirect), so a server that trickles bytes
# cannot hold a capture: a watchdog shuts the connection when it runs out (fetch reads it at each call).
TOTAL_TIMEOUT = 60.0
MAX_BYTES = 10_000_000  # the page's body (after decompression)
MAX_REDIRECTS = 5
MIN_TEXT_CHARS = 40  # less extracted text than this is not an article (a "Loading…" shell, a lone caption)
HTML_TYPES = ("text/html", "application/xhtml+xml")
CHUNK = 64 * 1024
_REDIRECTS = (301, 302, 303, 307, 308)

Progress = Callable[[str], None]  # told how far a capture got; raising in it stops the capture, unwritten
SAVING = "saving…"  # the last progress step, just before the node is written


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cairn")
    except PackageNotFoundError:
        return "0+unknown"


def user_agent() -> str:
    return f"Cairn/{_version()} (personal knowledge app; fetches a page its user asked to capture)"


class CaptureError(CairnError):
    """A page could not be captured; the message is one sentence, `kind` says which failure it was:
    bad_url, offline, refused, timeout, tls, network, status, redirects, not_html, too_large, empty."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Page:
    """A fetched page, decoded."""

    url: str  # as asked (normalised)
    final_url: str  # after redirects
    redirects: tuple[str, ...]  # every address a redirect led to, in order
    content_type: str
    charset: str  # the codec the body was decoded with
    html: str
    size: int  # bytes of body read


@dataclass(frozen=True)
class Extracted:
    """A page's main text and metadata."""

    title: str
    text: str  # markdown: headings, paragraphs, lists
    description: str
    author: str | None
    site: str | None
    date: str | None  # YYYY-MM-DD when the page gives a real date, else None


@dataclass
class Captured:
    """What capture() did: the node it wrote, or the one that already links to the address."""

    node: dict[str, Any]
    existing: bool = False  # the address was captured before: `node` is that node, nothing was written
    page: Page | None = None
    extracted: Extracted | None = None
    capture: dict[str, Any] = field(default_factory=dict)  # what metadata.capture holds


# -- addresses ------------------------------------------------------------------------------------
def normalise_url(url: str) -> str:
    """`url` ready to request: trimmed, https:// added to a bare host, no fragment, unsafe characters
    percent-encoded, an international host name in its ASCII form. Refuses anything but http(s)."""
    from urllib.parse import quote, urlsplit, urlunsplit

    if not isinstance(url, str) or not url.strip():
        raise CaptureError("bad_url", "No address given: pass the page's URL, such as https://example.com/article.")
    text = url.strip()
    if "://" not in text and not text.lower().startswith(("mailto:", "file:", "javascript:", "data:")):
        text = "https://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise CaptureError("bad_url", f"{url.strip()!r} is not a valid web address ({exc}).") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise CaptureError("bad_url", f"Only http:// and https:// pages can be captured; {url.strip()!r} is {scheme}:.")
    host = parts.hostname or ""
    if not host:
        raise CaptureError("bad_url", f"{url.strip()!r} names no host; a web address looks like https://example.com/page.")
    try:
        host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        raise CaptureError("bad_url", f"The host name {parts.hostname!r} is not a valid domain name.") from None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    if parts.username is not None:
        raise CaptureError("bad_url", "An address with a user name or password in it is not captured; "
                                      "remove the part before @.")
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~-._")
    query = quote(parts.query, safe="=&%:@!$'()*+,;/?~-._")
    return urlunsplit((scheme, netloc, path, query, ""))


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.netloc or url


# -- fetching -------------------------------------------------------------------------------------
def _network_error(exc: BaseException, url: str, timeout: float) -> CaptureError:
    """One sentence for a failure to connect or read."""
    import socket
    import ssl
    from urllib.error import URLError

    host = _host(url)
    reason = exc.reason if isinstance(exc, URLError) else exc
    if isinstance(reason, str):  # urllib's own words ("unknown url type", "no host given")
        return CaptureError("network", f"Could not fetch {url}: {reason}.")
    if isinstance(reason, socket.gaierror):
        return CaptureError("offline", f"Could not look up {host}: you may be offline, or the name is misspelt.")
    if isinstance(reason, ConnectionRefusedError):
        return CaptureError("refused", f"{host} refused the connection: no web server answers at that address.")
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return CaptureError("timeout", f"{host} did not answer within {timeout:g} s; try again later.")
    if isinstance(reason, ssl.SSLCertVerificationError):
        return CaptureError("tls", f"The secure connection to {host} failed: its certificate could not be verified "
                                   f"({reason.verify_message or reason}).")
    if isinstance(reason, ssl.SSLError):
        return CaptureError("tls", f"The secure connection to {host} failed ({reason}).")
    if isinstance(reason, OSError) and reason.errno in (101, 113, 65, 51):  # ENETUNREACH, EHOSTUNREACH (Linux, macOS)
        return CaptureError("offline", f"Cannot reach {host}: the network is unreachable (are you offline?).")
    if isinstance(reason, ConnectionResetError):
        return CaptureError("network", f"{host} closed the connection before sending the page; try again later.")
    detail = str(reason) or type(reason).__name__
    return CaptureError("network", f"Could not fetch {url}: {detail}.")


def _status_error(code: int, reason: str, url: str) -> CaptureError:
    # The reason phrase is the server's own text (up to a line of any length): a few words of it are
    # enough to say what happened, and no more reaches the user or the model.
    reason = " ".join(reason.split())
    reason = reason[:60] + "…" if len(reason) > 60 else reason
    words = f"HTTP {code}" + (f" {reason}" if reason else "")
    if code in (404, 410):
        return CaptureError("status", f"There is no page at {url} ({words}).")
    if code in (401, 403):
        return CaptureError("status", f"{url} refused access ({words}): a page behind a login cannot be captured.")
    if code == 429:
        return CaptureError("status", f"{_host(url)} is limiting requests ({words}); try again later.")
    if code >= 500:
        return CaptureError("status", f"The server at {_host(url)} failed ({words}); try again later.")
    return CaptureError("status", f"{url} answered {words} instead of a page.")


def _not_html(content_type: str, url: str) -> CaptureError:
    if content_type == "application/pdf":
        hint = "to capture a PDF, save it and use cairn add FILE"
    elif content_type.startswith("text/") or content_type in ("application/json", "application/xml"):
        hint = "to capture it, save it and use cairn add FILE"
    else:
        hint = "Cairn captures web pages (HTML) only"
    return CaptureError("not_html", f"{url} is not a web page ({content_type}); {hint}.")


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
# The HTML standard reads these labels as windows-1252 (pages labelled Latin-1 use its extra characters).
_AS_CP1252 = {"iso-8859-1", "iso8859-1", "latin-1", "latin1", "l1", "us-ascii", "ascii", "cp819", "ibm819"}


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _AS_CP1252:
        return "cp1252"
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def decode(body: bytes, header_charset: str | None) -> tuple[str, str]:
    """(text, codec): a byte-order mark, else the header's charset, else a <meta> in the first 4 KB,
    else UTF-8. Bytes the codec cannot read become U+FFFD; decoding never fails."""
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if body.startswith(bom):
            return body[len(bom):].decode(name, errors="replace"), name
    name = _codec(header_charset)
    if name is None:
        m = _META_CHARSET.search(body[:4096])
        name = _codec(m.group(1).decode("ascii", "replace")) if m else None
    if name is None or name.startswith("utf-16"):  # a <meta> cannot truthfully claim UTF-16 in ASCII bytes
        name = "utf-8"
    return body.decode(name, errors="replace"), name


def _sniff_html(start: bytes) -> bool:
    head = start.lstrip()[:512].lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or b"<html" in head


class _Deadline:
    """The whole fetch's deadline, enforced: every connection the fetch opens is watched, and a timer
    shuts them all down when the time is up, so a read in progress returns at once however slowly
    the server sends (a check between reads alone let one byte every 3 s hold a capture for minutes)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.url = ""  # the address being fetched (the hop), for the sentence
        self._expired = False
        self._lock = threading.Lock()
        self._watched: list = []  # duplicates of the connections' sockets, to shut them from the timer
        self._timer = threading.Timer(max(seconds, 0.0), self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "_Deadline":
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        with self._lock:  # (a timer already running shuts under the same lock: never a closed socket)
            for sock in self._watched:
                sock.close()
            self._watched = []

    @property
    def expired(self) -> bool:
        return self._expired or time.monotonic() >= self.end

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def watch(self, sock):
        """Called with each new connection's socket (before TLS wraps it); returns it unchanged."""
        spare = sock.dup()  # a second descriptor of the same connection: shutting it stops reads on the first
        with self._lock:
            self._watched.append(spare)
            if self._expired:
                _shut(spare)
        return sock

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            for sock in self._watched:
                _shut(sock)

    def error(self) -> CaptureError:
        return CaptureError("timeout", f"The page at {_host(self.url)} took longer than {self.seconds:g} s to arrive "
                                       "and was abandoned; nothing was saved.")

    def check(self) -> None:
        if self.expired:
            raise self.error()


def _shut(sock) -> None:
    """Shut a watched connection both ways: a blocked read on it returns at once."""
    import socket

    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError as exc:
        import errno

        if exc.errno != errno.ENOTCONN:  # already closed by the server or by the fetch: nothing to stop
            raise


def _watched_opener(deadline: _Deadline, redirect_handler):
    """A urllib opener whose HTTP and HTTPS connections register their socket with `deadline`."""
    import urllib.request

    def watched(connection_class):
        def make(*args, **kwargs):
            connection = connection_class(*args, **kwargs)
            create = connection._create_connection  # http.client's hook for making the socket
            connection._create_connection = lambda *a, **k: deadline.watch(create(*a, **k))
            return connection

        return make

    class HTTP(urllib.request.HTTPHandler):
        def do_open(self, http_class, req, **kwargs):
            return super().do_open(watched(http_class), req, **kwargs)

    class HTTPS(urllib.request.HTTPSHandler):
        def do_open(self, http_class, req, **kwargs):
            return super().do_open(watched(http_class), req, **kwargs)

    return urllib.request.build_opener(redirect_handler, HTTP, HTTPS)


def refuse_local(url: str) -> None:
    """CaptureError when `url`'s host is, or resolves to, an address on this machine or its local
    network (loopback, private, link-local such as a cloud's 169.254.169.254 metadata service,
    reserved): what a prompt-injected model or an MCP client must not be able to read through Cairn.
    (A DNS answer that changes between this check and the connection is not caught.)"""
    import ipaddress
    import socket
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return  # the fetch reports the lookup failure in its own words
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if (address.is_loopback or address.is_private or address.is_link_local or address.is_reserved
                or address.is_multicast or address.is_unspecified):
            raise CaptureError("local", f"{host} is an address on this machine or its local network ({address}); "
                                        "the model and MCP clients may capture public pages only. Capture it yourself "
                                        "(cairn add --url, or quick capture), or set [capture] local_addresses = true.")


def fetch(url: str, *, timeout: float = DEFAULT_TIMEOUT, total_timeout: float | None = None,
          max_bytes: int = MAX_BYTES, max_redirects: int = MAX_REDIRECTS, progress: Progress | None = None,
          public_only: bool = False) -> Page:
    """The page at `url` as text. Raises CaptureError with one sentence for every failure.
    `timeout`: for connecting and for each read; `total_timeout` (default TOTAL_TIMEOUT): for the whole
    fetch, redirects included, however the server paces its bytes. `public_only`: every hop's host
    must be public (`refuse_local`)."""
    asked = normalise_url(url)
    deadline = _Deadline(TOTAL_TIMEOUT if total_timeout is None else total_timeout)
    deadline.url = asked
    with deadline:
        try:
            page = _fetch(asked, deadline, timeout, max_bytes, max_redirects, progress or (lambda _text: None),
                          public_only)
        except CaptureError as exc:
            if deadline.expired:  # the watchdog cut the connection: that is what failed, whatever it looked like
                raise deadline.error() from exc
            raise
        deadline.check()  # a body the watchdog cut short can look like the page's end: never keep it
        return page


def _fetch(asked: str, deadline: _Deadline, timeout: float, max_bytes: int, max_redirects: int, say: Progress,
           public_only: bool) -> Page:
    import urllib.request
    from urllib.error import HTTPError, URLError
    from urllib.parse import urljoin
    import http.client

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        """Redirects come back as HTTPError, so each hop is checked (scheme, count) here."""

        def redirect_request(self, req, fp, code, msg, headers, newurl):
            return None

    opener = _watched_opener(deadline, NoRedirect)  # proxies from the environment still apply
    current, chain = asked, []
    for _hop in range(max_redirects + 1):
        deadline.url = current
        deadline.check()
        if public_only:
            refuse_local(current)  # each hop: a public page may redirect to an internal one
        say(f"connecting to {_host(current)}…")
        request = urllib.request.Request(current, headers={
            "User-Agent": user_agent(),
            "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1",
            "Accept-Encoding": "gzip, identity",
        })
        try:
            # never wait past the deadline, even to connect (the watchdog can stop a read, not a connect)
            response = opener.open(request, timeout=max(min(timeout, deadline.remaining()), 0.001))
        except HTTPError as exc:
            with exc:
                if exc.code in _REDIRECTS:
                    location = exc.headers.get("Location")
                    if not location:
                        raise CaptureError("status", f"{current} redirects (HTTP {exc.code}) without saying where to.") from None
                    target = urljoin(current, location.strip())
                    try:
                        current = normalise_url(target)
                    except CaptureError as bad:
                        raise CaptureError("redirects", f"{current} redirects to {target!r}, which cannot be "
                                                        f"captured: {bad}") from None
                    chain.append(current)
                    continue
                raise _status_error(exc.code, exc.reason if isinstance(exc.reason, str) else "", current) from None
        except URLError as exc:
            raise _network_error(exc, current, timeout) from None
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            raise _network_error(exc, current, timeout) from None
        with response:
            return _read(response, asked, current, tuple(chain), timeout, max_bytes, deadline, say)
    raise CaptureError("redirects", f"{asked} redirects more than {max_redirects} times (the last hop led to "
                                    f"{current}); stopped there.")


def _read(response, asked: str, final: str, chain: tuple[str, ...], timeout: float, max_bytes: int,
          deadline: _Deadline, say: Progress) -> Page:
    import http.client
    import zlib

    raw_type = response.headers.get("Content-Type")
    content_type = response.headers.get_content_type() if raw_type else ""
    if content_type and content_type not in HTML_TYPES:
        raise _not_html(content_type, final)
    length = response.headers.get("Content-Length")
    if length and length.strip().isdigit() and int(length) > max_bytes:
        raise _too_large(final, max_bytes, int(length))
    encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
    if encoding not in ("identity", "gzip", "x-gzip"):
        raise CaptureError("network", f"{final} sent the page compressed as {encoding!r}, which Cairn cannot read.")
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding != "identity" else None
    pieces: list[bytes] = []
    size = 0
    try:
        while True:
            deadline.check()
            piece = response.read(CHUNK)
            if not piece:
                break
            if inflate is not None:
                piece = inflate.decompress(piece, max_bytes + 1 - size)
            size += len(piece)
            if size > max_bytes:
                raise _too_large(final, max_bytes, None)
            pieces.append(piece)
            say(f"reading {final}: {size / 1_000_000:.1f} MB" if size >= 1_000_000 else f"reading {final}: {size // 1000} kB")
        if inflate is not None:
            rest = inflate.flush()
            size += len(rest)
            if size > max_bytes:
                raise _too_large(final, max_bytes, None)
            pieces.append(rest)
    except (TimeoutError, OSError, http.client.HTTPException, zlib.error) as exc:
        if isinstance(exc, zlib.error):
            raise CaptureError("network", f"{final} sent a damaged compressed page ({exc}).") from None
        if isinstance(exc, http.client.IncompleteRead):
            raise CaptureError("network", f"{_host(final)} closed the connection part-way through the page; "
                                          "try again later.") from None
        raise _network_error(exc, final, timeout) from None
    body = b"".join(pieces)
    if not content_type:  # no Content-Type at all: look at the bytes
        if not _sniff_html(body[:1024]):
            raise CaptureError("not_html", f"{final} sent no content type and does not look like a web page; "
                                           "Cairn captures web pages (HTML) only.")
        content_type = "text/html"
    html, charset = decode(body, response.headers.get_content_charset())
    return Page(url=asked, final_url=final, redirects=chain, content_type=content_type, charset=charset,
                html=html, size=size)


def _too_large(url: str, cap: int, declared: int | None) -> CaptureError:
    said = f" (it says {declared / 1_000_000:.1f} MB)" if declared else ""
    return CaptureError("too_large", f"The page at {url} is larger than the {cap / 1_000_000:g} MB limit{said}; "
                                     "nothing was saved.")


# -- extracting -----------------------------------------------------------------------------------
def extractor_version() -> str:
    import trafilatura

    return f"trafilatura {trafilatura.__version__}"


def real_date(value: str | None) -> str | None:
    """`value` when it is a real calendar date YYYY-MM-DD not in the future, else None."""
    if not value or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        return None
    try:
        day = date.fromisoformat(value.strip())
    except ValueError:
        return None
    return day.isoformat() if day <= datetime.now(timezone.utc).date() + timedelta(days=1) else None


def extract(page: Page) -> Extracted:
    """The main text (markdown) and metadata of `page`, without navigation, ads or comments.

    trafilatura judges which text is the article (a page of navigation alone has none) and reads the
    metadata; the page's main region, the element holding that text, is then kept whole with its
    structure (core/capture/html_markdown.py: headings, nested lists, tables, fenced code), and the title
    and date follow core/capture/page_meta.py. bench/web_structure.py measured the choice on real manuals."""
    import trafilatura

    from core.capture import html_markdown, page_meta

    doc = trafilatura.bare_extraction(page.html, url=page.final_url, with_metadata=True, include_comments=False,
                                      include_tables=True, include_formatting=True,
                                      # precision: a page of navigation alone yields no text, not its menu
                                      favor_precision=True)
    judged = (doc.text or "").strip() if doc is not None else ""
    if len(judged) < MIN_TEXT_CHARS:
        raise _no_article(page)
    root = html_markdown.parse(page.html)
    site = _clean(doc.sitename) or _clean(doc.hostname) or None
    title = page_meta.page_title(root, doc.title, site)
    date = real_date(page_meta.page_date(root, page.final_url))
    text = _without_title_line(structured_text(root, judged), title)
    if len(text) < MIN_TEXT_CHARS:
        raise _no_article(page)
    from core.graph.store import MAX_DESCRIPTION, MAX_TITLE

    return Extracted(
        title=(title or page.final_url)[:MAX_TITLE].strip(),
        text=text,
        description=_clean(doc.description)[:MAX_DESCRIPTION],
        author=_clean(doc.author) or None,
        site=site,
        date=date,
    )


# The share of the judged text's words the structured text must hold, or the judged text is kept instead.
MIN_STRUCTURED_RECALL = 0.9


def structured_text(root, judged: str) -> str:
    """The page's main region as markdown (its structure kept), or `judged` (trafilatura's text) when
    the region misses more than a tenth of what trafilatura judged to be the article."""
    from collections import Counter

    from core.capture import html_markdown

    text = html_markdown.to_markdown(html_markdown.main_region(root, judged))
    want, got = Counter(html_markdown.markdown_words(judged)), Counter(html_markdown.markdown_words(text))
    kept = sum((want & got).values()) / max(sum(want.values()), 1)
    return text if kept >= MIN_STRUCTURED_RECALL else judged


def _without_title_line(text: str, title: str) -> str:
    """`text` without its first line when that line is the title (the page's own h1 repeats it)."""
    lines = text.splitlines()
    if lines and title and lines[0].lstrip("# ").strip() == title:
        return "\n".join(lines[1:]).strip()
    return text


def _no_article(page: Page) -> CaptureError:
    return CaptureError("empty", f"Found no article text on {page.final_url}: the page may be built by "
                                 "JavaScript, or hold only navigation. Nothing was saved.")


def _clean(value: Any) -> str:
    return re.sub(r"\s+", " ", value).strip() if isinstance(value, str) else ""


# -- storing --------------------------------------------------------------------------------------
def captured_before(store, url: str) -> dict[str, Any] | None:
    """The node whose link is `url`, if one is (the oldest when several are)."""
    row = store.db.execute("SELECT id FROM nodes WHERE link = ? ORDER BY id LIMIT 1", (url,)).fetchone()
    return store.get_node(row[0]) if row else None


def capture(store, url: str, *, again: bool = False, title: str | None = None, description: str | None = None,
            event_date: str | None = None, dimensions=None, type: str = "note", origin: str = "user",
            timeout: float = DEFAULT_TIMEOUT, total_timeout: float | None = None, max_bytes: int = MAX_BYTES,
            max_redirects: int = MAX_REDIRECTS, progress: Progress | None = None,
            public_only: bool = False) -> Captured:
    """Fetch `url`, extract it and store it as a node (source: the text, link: the final URL).
    `public_only` for a page the model or an MCP client asks for (`refuse_local`).

    An address some node already links to (as asked, or where its redirects end) is not captured
    again unless `again`: the result then has `existing=True` and that node. `title`, `description`
    and `event_date` override what the page says. Nothing is written when anything fails.
    """
    say = progress or (lambda _text: None)
    asked = normalise_url(url)
    if not again:
        before = captured_before(store, asked)
        if before is not None:
            return Captured(before, existing=True)
    page = fetch(asked, timeout=timeout, total_timeout=total_timeout, max_bytes=max_bytes,
                 max_redirects=max_redirects, progress=say, public_only=public_only)
    if not again and page.final_url != asked:
        before = captured_before(store, page.final_url)
        if before is not None:
            return Captured(before, existing=True, page=page)
    say("extracting the main text…")
    found = extract(page)
    meta = {
        "url": asked,
        "final_url": page.final_url,
        "fetched_at": clock.now(),
        "author": found.author,
        "site": found.site,
        "date": found.date,
        "extractor": extractor_version(),
    }
    metadata: dict[str, Any] = {"capture": meta}
    if origin != "user":
        metadata["created_via"] = origin
    say(SAVING)
    node = store.add_node(
        title or found.title, found.text, description=description if description is not None else found.description,
        link=page.final_url, event_date=event_date or found.date, dimensions=dimensions, type=type, metadata=metadata,
        origin=provenance.WEB,
    )
    return Captured(node, page=page, extracted=found, capture=meta)

