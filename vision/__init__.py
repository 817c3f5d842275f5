"""Page images and their layout, on the CPU, without torch and without the engine.

- `limits`: the caps on an upload (bytes, pages, pixels, DPI) and the typed `InputError`s.
- `formats`: what an upload is, from its magic bytes (and a ZIP package's type entries).
- `packages`: ZIP packages (OOXML, OpenDocument, EPUB) checked from their central directory.
- `office`: office, HTML and EPUB documents converted to PDF under a budget (LibreOffice in a
  sandbox; `reflow_pdf`: MuPDF's HTML engine, as a child process).
- `images`: PNG/JPEG/TIFF headers checked before decoding; frames decoded to RGB.
- `document`: `Document.open` -> pages rendered under the pixel cap, the PDF text layer.
- `pages`: page selections like "1-5,8".
- `onnx_models`: the bundled ONNX files and one onnxruntime session per model per process.
- `layout`: regions from the CDLA layout model, and the recognition task per label.
- `lines`: text lines from the PP-OCRv4 detector.
- `line_assignment`: lines to regions; lines no region holds become regions.
- `reading_order`: columns, bands, headers and footers; lines in rows.
- `crops`: region crops with a margin, boxes on the 0-1000 grid.
- `page_analysis`: `analyze_page(image) -> PageLayout`, with per-stage timings.
"""
