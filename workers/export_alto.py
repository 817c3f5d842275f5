"""A job's result as ALTO 4 XML (namespace ns-v4, schema 4.2): what libraries and archives
keep beside their scans.

    alto > Description (pixels, the source file) > Tags (roles, box sources)
         > Layout > Page (one per page of every document, in order)
           > TopMargin | LeftMargin | RightMargin | BottomMargin | PrintSpace
             > TextBlock > TextLine > String (CONTENT, WC) SP String ...
             > Illustration (a figure with no text)

Reading order is the blocks' `IDNEXT` chain through the whole page (each block names the next
one to read, whichever margin it stands in) and, inside each margin and the print space, the
order the blocks are written. Furniture (`workers.furniture`) stands where ALTO puts it: a
running header in `TopMargin`, a footer in `BottomMargin`, a page number in the margin it
stands in, line numbers and margin notes in the left or right margin; the body in `PrintSpace`.
Every block also names its exact role through `TAGREFS` to a `LayoutTag` (`role_header`, ...).

Word confidences are `WC` (0-1). Where a word's box came from is a `TAGREFS` to an `OtherTag`:
`box_text_layer` (the PDF's own word box), `box_ctc` (aligned on the line image) or
`box_interpolated` (spread along its line by character widths); see `workers.line_words`.
Measurements are pixels of the rendered page.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from workers.export_layout import ExportPage, ExportRegion, IntBox, export_pages
from workers.recognizers.languages import bcp47

ALTO_NS = "http://www.loc.gov/standards/alto/ns-v4#"
SCHEMA_LOCATION = f"{ALTO_NS} http://www.loc.gov/standards/alto/v4/alto-4-2.xsd"
_MARGINS = ("TopMargin", "LeftMargin", "RightMargin", "BottomMargin", "PrintSpace")   # the schema's order
BOX_SOURCES = {"text_layer": "the PDF text layer's own word box",
               "ctc": "from its characters' places on the line image (a CTC alignment of the text)",
               "interpolated": "spread along the line by character widths (an estimate)"}


def render_alto(result: dict[str, Any]) -> str:
    pages = list(export_pages(result))
    alto = ET.Element("alto", {"xmlns": ALTO_NS, "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
                               "xsi:schemaLocation": SCHEMA_LOCATION})
    description = ET.SubElement(alto, "Description")
    ET.SubElement(description, "MeasurementUnit").text = "pixel"
    source = ET.SubElement(description, "sourceImageInformation")
    ET.SubElement(source, "fileName").text = ", ".join(dict.fromkeys(page.filename for page in pages))
    roles = sorted({region.role for page in pages for region in page.regions})
    tags = ET.SubElement(alto, "Tags")
    for role in roles:
        ET.SubElement(tags, "LayoutTag", {"ID": _tag("role", role), "TYPE": "role", "LABEL": role})
    for box_source, what in BOX_SOURCES.items():
        ET.SubElement(tags, "OtherTag", {"ID": _tag("box", box_source), "TYPE": "box_source", "LABEL": box_source,
                                         "DESCRIPTION": what})
    layout = ET.SubElement(alto, "Layout")
    for index, page in enumerate(pages):
        _page(layout, page, index)
    ET.indent(alto, space=" ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(alto, encoding="unicode") + "\n"


def _page(layout: ET.Element, page: ExportPage, index: int) -> None:
    element = ET.SubElement(layout, "Page", {"ID": f"page_{index + 1}", "PHYSICAL_IMG_NR": str(index + 1),
                                             "PRINTED_IMG_NR": str(page.number),
                                             "WIDTH": str(page.width), "HEIGHT": str(page.height)})
    by_space: dict[str, list[ExportRegion]] = {space: [] for space in _MARGINS}
    for region in page.regions:
        by_space[_space(region, page)].append(region)
    ids = {region.reading_index: f"block_{index + 1}_{region.reading_index + 1}" for region in page.regions}
    following = dict(zip([r.reading_index for r in page.regions], [r.reading_index for r in page.regions][1:]))
    for space in _MARGINS:
        regions = by_space[space]
        if not regions and space != "PrintSpace":
            continue
        box = _union([region.bbox for region in regions]) if regions else (0, 0, page.width, page.height)
        container = ET.SubElement(element, space, {"ID": f"{space.lower()}_{index + 1}", **_position(box)})
        for region in regions:
            attrs = {"ID": ids[region.reading_index], **_position(region.bbox), "TAGREFS": _tag("role", region.role)}
            if region.reading_index in following:
                attrs["IDNEXT"] = ids[following[region.reading_index]]
            if region.is_picture:
                ET.SubElement(container, "Illustration", {**attrs, "TYPE": region.label})
                continue
            block = ET.SubElement(container, "TextBlock", attrs)
            for line_no, line in enumerate(region.lines, 1):
                line_id = f"{ids[region.reading_index]}_{line_no}"
                language = bcp47(line.language)   # xsd:language (BCP 47), as ALTO's TextLine takes it
                text_line = ET.SubElement(block, "TextLine", {"ID": line_id, **_position(line.bbox),
                                                              **({"LANG": language} if language else {})})
                for word_no, word in enumerate(line.words, 1):
                    if word_no > 1:
                        previous = line.words[word_no - 2].bbox
                        ET.SubElement(text_line, "SP", {"WIDTH": str(max(word.bbox[0] - previous[2], 0)),
                                                        "HPOS": str(previous[2]), "VPOS": str(word.bbox[1])})
                    attrs = {"ID": f"{line_id}_{word_no}", **_position(word.bbox), "CONTENT": word.text,
                             "TAGREFS": _tag("box", word.box_source)}
                    if word.confidence is not None:
                        attrs["WC"] = f"{word.confidence:.3f}"
                    ET.SubElement(text_line, "String", attrs)


def _space(region: ExportRegion, page: ExportPage) -> str:
    """Where ALTO puts the region: furniture in the margin it stands in, the body in the print space."""
    x = (region.bbox[0] + region.bbox[2]) / 2
    y = (region.bbox[1] + region.bbox[3]) / 2
    if region.role == "header":
        return "TopMargin"
    if region.role == "footer":
        return "BottomMargin"
    if region.role == "page_number":
        return "TopMargin" if y < page.height / 2 else "BottomMargin"
    if region.role in ("line_numbers", "margin_note"):
        return "LeftMargin" if x < page.width / 2 else "RightMargin"
    return "PrintSpace"


def _position(box: IntBox) -> dict[str, str]:
    return {"HPOS": str(box[0]), "VPOS": str(box[1]), "WIDTH": str(box[2] - box[0]), "HEIGHT": str(box[3] - box[1])}


def _tag(kind: str, value: str) -> str:
    """A tag's ID: an XML name (letters, digits, '_', '-', '.'), whatever the role is called."""
    return f"{kind}_" + "".join(char if char.isalnum() or char in "_-." else "_" for char in value)


def _union(boxes: list[IntBox]) -> IntBox:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
