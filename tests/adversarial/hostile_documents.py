"""Hostile office, HTML and EPUB documents, written by hand as their formats say (ODF 1.3 packages,
EPUB 3 containers), and a listener that records every HTTP request a converter makes.

- `linked_odt`: a text document whose two pictures are links, one to a URL on the listener and one
  to a `file://` path on this host; a converter that follows them fetches the URL (a request
  forgery) or embeds the host's file in the PDF (a file disclosure).
- `macro_odt`: a text document with a Basic macro bound to its opening, which would add a word to it.
- `linked_html`, `linked_epub`: the same two links, plus a path relative to the document.
"""
from __future__ import annotations

import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ODT_MIMETYPE = "application/vnd.oasis.opendocument.text"
VISIBLE = "This sentence is the visible text of a hostile document."
MACRO_WORD = "MACRORAN"
_ODF_NAMESPACES = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
                   'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
                   'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
                   'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
                   'xmlns:script="urn:oasis:names:tc:opendocument:xmlns:script:1.0" '
                   'xmlns:xlink="http://www.w3.org/1999/xlink"')


class RecordingListener:
    """An HTTP server on loopback that answers 404 and remembers each request line."""

    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:   # noqa: N802 (the stdlib's name)
                hits.append(self.requestline)
                self.send_error(404)

            do_HEAD = do_OPTIONS = do_PROPFIND = do_GET   # WebDAV probes count too

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _odt(path: Path, body: str, extra: dict[str, str] | None = None, scripts: str = "") -> Path:
    content = (f'<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content {_ODF_NAMESPACES} '
               f'office:version="1.3">{scripts}<office:body><office:text>{body}</office:text></office:body>'
               "</office:document-content>")
    entries = {"content.xml": content, **(extra or {})}
    manifest = ('<?xml version="1.0" encoding="UTF-8"?>\n<manifest:manifest xmlns:manifest="urn:oasis:names:tc:'
                'opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
                f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{ODT_MIMETYPE}"/>'
                + "".join(f'<manifest:file-entry manifest:full-path="{name}" manifest:media-type="text/xml"/>'
                          for name in entries) + "</manifest:manifest>")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr(zipfile.ZipInfo("mimetype"), ODT_MIMETYPE, compress_type=zipfile.ZIP_STORED)
        package.writestr("META-INF/manifest.xml", manifest)
        for name, text in entries.items():
            package.writestr(name, text)
    return path


def _linked_image(href: str) -> str:
    return ('<text:p><draw:frame text:anchor-type="as-char" svg:width="6in" svg:height="1in">'
            f'<draw:image xlink:href="{href}" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/>'
            "</draw:frame></text:p>")


def linked_odt(path: Path, url: str, host_file: Path) -> Path:
    return _odt(path, f"<text:p>{VISIBLE}</text:p>" + _linked_image(f"{url}/remote.png")
                + _linked_image(host_file.as_uri()))


def macro_odt(path: Path) -> Path:
    listeners = ('<office:scripts><office:event-listeners><script:event-listener script:language="ooo:script" '
                 'script:event-name="dom:load" xlink:href="vnd.sun.star.script:Standard.Module1.Main?'
                 'language=Basic&amp;location=document"/></office:event-listeners></office:scripts>')
    libraries = ('<?xml version="1.0" encoding="UTF-8"?>\n<library:libraries xmlns:library="http://openoffice.org/'
                 '2000/library" xmlns:xlink="http://www.w3.org/1999/xlink"><library:library library:name="Standard" '
                 'library:link="false"/></library:libraries>')
    library = ('<?xml version="1.0" encoding="UTF-8"?>\n<library:library xmlns:library="http://openoffice.org/2000/'
               'library" library:name="Standard" library:readonly="false" library:passwordprotected="false">'
               '<library:element library:name="Module1"/></library:library>')
    module = ('<?xml version="1.0" encoding="UTF-8"?>\n<script:module xmlns:script="http://openoffice.org/2000/script" '
              'script:name="Module1" script:language="StarBasic">Sub Main\n'
              f'  ThisComponent.getText().insertString(ThisComponent.getText().getEnd(), " {MACRO_WORD}", False)\n'
              "End Sub\n</script:module>")
    return _odt(path, f"<text:p>{VISIBLE}</text:p>", {"Basic/script-lc.xml": libraries,
                "Basic/Standard/script-lb.xml": library, "Basic/Standard/Module1.xml": module}, listeners)


def linked_html(url: str, host_file: Path) -> str:
    images = "".join(f'<p><img src="{src}" width="600" height="100"></p>'
                     for src in (f"{url}/remote.png", host_file.as_uri(), host_file.name, f"../{host_file.name}"))
    return (f'<!DOCTYPE html><html><head><link rel="stylesheet" href="{url}/style.css"></head>'
            f"<body><p>{VISIBLE}</p>{images}</body></html>")


def linked_epub(path: Path, url: str, host_file: Path) -> Path:
    chapter = ('<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t'
               f"</title></head><body><p>{VISIBLE}</p>"
               + "".join(f'<p><img src="{src}" alt=""/></p>' for src in
                         (f"{url}/remote.png", host_file.as_uri(), f"../../../../../../..{host_file}"))
               + "</body></html>")
    opf = ('<?xml version="1.0" encoding="utf-8"?>\n<package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
           'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">'
           "urn:uuid:00000000-0000-4000-8000-000000000034</dc:identifier><dc:title>t</dc:title>"
           '<dc:language>en</dc:language></metadata><manifest><item id="c" href="c.xhtml" '
           'media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c"/></spine></package>')
    container = ('<?xml version="1.0"?>\n<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:'
                 'container"><rootfiles><rootfile full-path="OEBPS/p.opf" media-type="application/oebps-package+xml"/>'
                 "</rootfiles></container>")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", container)
        book.writestr("OEBPS/p.opf", opf)
        book.writestr("OEBPS/c.xhtml", chapter)
    return path
