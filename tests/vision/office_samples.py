"""Real office, HTML and EPUB documents for the conversion tests, each holding the same known text
and one picture with words in it.

DOCX, PPTX and XLSX are written by python-docx, python-pptx and openpyxl (the libraries people
make such files with); ODT and RTF, ODP and ODS are LibreOffice's own saves of those (its
`--convert-to`, run here outside our sandbox on files we made); the HTML is written by hand with
its picture inline, the EPUB by hand as the EPUB 3 container format says.
"""
from __future__ import annotations

import base64
import io
import subprocess
import zipfile
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

TITLE = "Harbour survey of the northern bay"
SENTENCES = (
    "The first survey boat left the eastern pier before sunrise.",
    "Seventeen mooring buoys were counted between the breakwater and the lighthouse.",
    "Water depth at the inner basin measured eleven metres at low tide.",
    "The committee will review the dredging budget in its spring meeting.",
)
PICTURE_WORDS = ("QUOKKA", "LANTERN", "MERIDIAN")
KINDS = ("docx", "odt", "rtf", "pptx", "odp", "xlsx", "ods", "html", "epub")
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def picture_png() -> bytes:
    """The picture every document carries: three words in large black capitals on white."""
    image = Image.new("RGB", (1200, 200), "white")
    ImageDraw.Draw(image).text((40, 60), " ".join(PICTURE_WORDS), fill="black", font=ImageFont.truetype(FONT, 72))
    buffer = io.BytesIO()
    image.save(buffer, "PNG", dpi=(200, 200))
    return buffer.getvalue()


def make_all(folder: Path) -> dict[str, Path]:
    """Every kind of document, written into `folder`: {kind: path}."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {"docx": docx(folder / "survey.docx"), "pptx": pptx(folder / "survey.pptx"),
            "xlsx": xlsx(folder / "survey.xlsx"), "html": html(folder / "survey.html"),
            "epub": epub(folder / "survey.epub")}
    saves = {target: libreoffice_save(made[source], target, folder)   # started at once, each its own profile
             for target, source in (("odt", "docx"), ("rtf", "docx"), ("odp", "pptx"), ("ods", "xlsx"))}
    for target, (process, path) in saves.items():
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0 and path.is_file(), f"LibreOffice did not save {target}: {stderr[-300:]!r}"
        made[target] = path
    return made


def docx(path: Path) -> Path:
    import docx as python_docx
    from docx.shared import Inches

    document = python_docx.Document()
    document.add_heading(TITLE, level=1)
    document.add_paragraph(" ".join(SENTENCES[:2]))
    document.add_picture(io.BytesIO(picture_png()), width=Inches(5))
    document.add_paragraph(" ".join(SENTENCES[2:]))
    document.save(path)
    return path


def pptx(path: Path) -> Path:
    from pptx import Presentation
    from pptx.util import Inches, Pt

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])   # title only
    slide.shapes.title.text = TITLE
    body = slide.shapes.add_textbox(Inches(0.5), Inches(1.6), Inches(9), Inches(3)).text_frame
    body.word_wrap = True
    for index, sentence in enumerate(SENTENCES):
        paragraph = body.paragraphs[0] if index == 0 else body.add_paragraph()
        paragraph.text = sentence
        paragraph.font.size = Pt(18)
    slide.shapes.add_picture(io.BytesIO(picture_png()), Inches(1), Inches(5), width=Inches(7))
    presentation.save(path)
    return path


def xlsx(path: Path) -> Path:
    from openpyxl import Workbook
    from openpyxl.drawing.image import Image as SheetImage

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Survey"
    sheet.column_dimensions["A"].width = 110   # every sentence inside its cell
    for row, text in enumerate((TITLE, *SENTENCES), start=1):
        sheet.cell(row=row, column=1, value=text)
    picture = SheetImage(io.BytesIO(picture_png()))
    picture.width, picture.height = 600, 100
    sheet.add_image(picture, "A8")
    workbook.save(path)
    return path


def html_text(picture_src: str | None = None, extra_body: str = "") -> str:
    src = picture_src or "data:image/png;base64," + base64.b64encode(picture_png()).decode()
    paragraphs = "\n".join(f"<p>{sentence}</p>" for sentence in SENTENCES)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{TITLE}</title></head>\n'
            f'<body><h1>{TITLE}</h1>\n{paragraphs}\n<p><img src="{src}" alt="" width="600" height="100"></p>\n'
            f"{extra_body}</body></html>\n")


def html(path: Path) -> Path:
    path.write_text(html_text())
    return path


def epub(path: Path) -> Path:
    paragraphs = "\n".join(f"<p>{sentence}</p>" for sentence in SENTENCES)
    chapter = (f'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml">'
               f"<head><title>{TITLE}</title></head><body><h1>{TITLE}</h1>\n{paragraphs}\n"
               f'<p><img src="picture.png" alt="" style="width:100%"/></p></body></html>')
    package = ('<?xml version="1.0" encoding="utf-8"?>\n<package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
               'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
               f'<dc:identifier id="id">urn:uuid:6b1c7c4e-0f43-4c1e-9a55-000000000034</dc:identifier>'
               f"<dc:title>{TITLE}</dc:title><dc:language>en</dc:language></metadata>"
               '<manifest><item id="chapter" href="chapter.xhtml" media-type="application/xhtml+xml"/>'
               '<item id="picture" href="picture.png" media-type="image/png"/></manifest>'
               '<spine><itemref idref="chapter"/></spine></package>')
    container = ('<?xml version="1.0"?>\n<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                 '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                 "</rootfiles></container>")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", container)
        book.writestr("OEBPS/content.opf", package)
        book.writestr("OEBPS/chapter.xhtml", chapter)
        book.writestr("OEBPS/picture.png", picture_png())
    return path


def libreoffice_save(source: Path, target: str, folder: Path) -> tuple[subprocess.Popen, Path]:
    """LibreOffice saving `source` as `target` (odt, rtf, odp, ods), with a profile of its own: the
    running process and the file it writes."""
    profile = folder / f".profile-{target}"
    process = subprocess.Popen(["soffice", f"-env:UserInstallation=file://{profile}", "--headless", "--norestore",
                                "--convert-to", target, "--outdir", str(folder), str(source)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return process, folder / f"{source.stem}.{target}"
