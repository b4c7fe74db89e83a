"""Small PDFs written by hand for the tests and the benchmark: real text (a Type1 Helvetica font and a
content stream of `Tj` operators), a page that is only an image (what a scanner makes), an info dict
with or without /Title, a password, a corrupt or a truncated file. Nothing is copied from the web."""

from __future__ import annotations

import io


def _escape(text: str) -> bytes:
    raw = text.encode("latin-1", "replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _text_stream(text: str, layout: str = "plain") -> bytes:
    """One `Tj` per line, 14 points apart, from the top left of a Letter page. layout "kerned": each
    line a `TJ` array whose words are spaced by positioning, not by space characters (as typesetters
    write them); "columns": the first half of the lines in a left column, the rest in a right one."""
    lines = text.splitlines()
    columns = [lines[: (len(lines) + 1) // 2], lines[(len(lines) + 1) // 2:]] if layout == "columns" else [lines]
    ops = []
    for c, column in enumerate(columns):
        ops += [b"BT", b"/F1 %d Tf" % (9 if layout == "columns" else 12), b"14 TL", b"%d 720 Td" % (72 + 260 * c)]
        for i, line in enumerate(column):
            if i:
                ops.append(b"T*")
            if layout == "kerned":
                ops.append(b"[" + b" -280 ".join(b"(" + _escape(w) + b")" for w in line.split(" ")) + b"] TJ")
            else:
                ops.append(b"(" + _escape(line) + b") Tj")
        ops.append(b"ET")
    return b"\n".join(ops)


IMAGE = None  # a page given as IMAGE holds a grey image and no text (a scanned page)


def make_pdf(pages: list[str | None], title: str | None = None, author: str | None = None,
             layout: str = "plain") -> bytes:
    """A PDF whose page i shows the lines of pages[i]; a None page is an image without any text."""
    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below
    pages_obj = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    pixels = bytes(range(0, 256, 4)) * 64  # 64 x 64 grey
    image = add(b"<< /Type /XObject /Subtype /Image /Width 64 /Height 64 /ColorSpace /DeviceGray"
                b" /BitsPerComponent 8 /Length %d >>\nstream\n" % len(pixels) + pixels + b"\nendstream")
    kids = []
    for text in pages:
        if text is None:
            content = b"q 400 0 0 400 100 300 cm /Im1 Do Q"
        else:
            content = _text_stream(text, layout)
        stream = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
                        b" /Resources << /Font << /F1 %d 0 R >> /XObject << /Im1 %d 0 R >> >> >>"
                        % (pages_obj, stream, font, image)))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    objects[pages_obj - 1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids)
                              + b"] /Count %d >>" % len(kids))
    info_parts = []
    if title is not None:
        info_parts.append(b"/Title (" + _escape(title) + b")")
    if author is not None:
        info_parts.append(b"/Author (" + _escape(author) + b")")
    info = add(b"<< " + b" ".join(info_parts) + b" >>") if info_parts else None

    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % n + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info:
        trailer += b" /Info %d 0 R" % info
    out.write(b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def encrypted_pdf(pages: list[str | None], user_password: str = "secret", owner_password: str = "owner") -> bytes:
    """The same PDF with a password (AES-128); an empty user password opens without one."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(pages))))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def outlined_pdf(pages: list[str | None], outline: list[tuple[str, int, int]]) -> bytes:
    """The same PDF with bookmarks: (title, page index, level from 0), each under the last one of the
    level above it (pypdf writes them as a PDF's /Outlines)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(pages))))
    parents: dict[int, object] = {}
    for title, page, level in outline:
        parents[level] = writer.add_outline_item(title=title, page_number=page, parent=parents.get(level - 1))
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def corrupt_pdf() -> bytes:
    """A PDF header followed by bytes that are no PDF structure at all."""
    return b"%PDF-1.7\n" + bytes((i * 37) % 251 for i in range(2000))


def truncated_pdf(pages: list[str | None]) -> bytes:
    """A real PDF cut off before its first page object ends (a download that stopped)."""
    whole = make_pdf(pages)
    return whole[: whole.index(b"/Type /Page ") + 5]
