"""Writes `examples/invoice.pdf`: a one-page example invoice, made with PyMuPDF.

    python examples/make_invoice.py [OUT.pdf]

It is the document the schema-extraction examples and tests use with
`schemas/invoice.json`; `INVOICE` holds the values printed on it, so a test can
check what was extracted against what is on the page. The output is
byte-for-byte reproducible (fixed metadata, no generated ids), so the
committed PDF can be checked against this script.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pymupdf

PAGE_W, PAGE_H = 595, 842   # A4 in points
LEFT = 60
RIGHT = PAGE_W - 60
OUT_PATH = Path(__file__).resolve().parent / "invoice.pdf"

INVOICE = {
    "invoice_number": "INV-2024-0117",
    "invoice_date": "2024-03-14",
    "due_date": "2024-04-13",
    "seller_name": "Northwind Paper Supplies Ltd",
    "seller_address": "12 Harbour Road, Bristol BS1 4DJ, United Kingdom",
    "buyer_name": "Blue Finch Design Studio",
    "buyer_address": "88 Mill Lane, Leeds LS2 7HE, United Kingdom",
    "currency": "GBP",
    # description, quantity, unit price
    "line_items": [("A4 copier paper, 500 sheets", 10, 4.50),
                   ("Recycled envelopes, box of 100", 4, 7.25),
                   ("Archive storage boxes", 6, 3.80)],
    "tax_rate": 0.20,
}


def amounts(invoice: dict) -> tuple[list[float], float, float, float]:
    """Line amounts, subtotal, tax and total, rounded to pence as printed."""
    lines = [round(quantity * price, 2) for _, quantity, price in invoice["line_items"]]
    subtotal = round(sum(lines), 2)
    tax = round(subtotal * invoice["tax_rate"], 2)
    return lines, subtotal, tax, round(subtotal + tax, 2)


def make_invoice_pdf(invoice: dict = INVOICE) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((LEFT, 90), "INVOICE", fontname="hebo", fontsize=28)
    page.insert_text((LEFT, 130), invoice["seller_name"], fontname="hebo", fontsize=13)
    page.insert_text((LEFT, 148), invoice["seller_address"], fontname="helv", fontsize=11)

    y = 190
    for label, value in (("Invoice number:", invoice["invoice_number"]), ("Invoice date:", invoice["invoice_date"]),
                         ("Due date:", invoice["due_date"])):
        page.insert_text((LEFT, y), label, fontname="hebo", fontsize=12)
        page.insert_text((LEFT + 120, y), value, fontname="helv", fontsize=12)
        y += 20

    page.insert_text((LEFT, 270), "Bill to:", fontname="hebo", fontsize=12)
    page.insert_text((LEFT, 288), invoice["buyer_name"], fontname="helv", fontsize=12)
    page.insert_text((LEFT, 306), invoice["buyer_address"], fontname="helv", fontsize=11)

    columns = (LEFT, 330, 400, 480)   # description, quantity, unit price, amount
    y = 360
    for x, heading in zip(columns, ("Description", "Quantity", "Unit price", "Amount")):
        page.insert_text((x, y), heading, fontname="hebo", fontsize=12)
    page.draw_line((LEFT, y + 6), (RIGHT, y + 6), width=0.8)
    line_amounts, subtotal, tax, total = amounts(invoice)
    for (description, quantity, price), amount in zip(invoice["line_items"], line_amounts):
        y += 24
        for x, text in zip(columns, (description, str(quantity), f"{price:.2f}", f"{amount:.2f}")):
            page.insert_text((x, y), text, fontname="helv", fontsize=12)
    page.draw_line((LEFT, y + 10), (RIGHT, y + 10), width=0.8)

    currency = invoice["currency"]
    y += 36
    for label, value in (("Subtotal:", subtotal), (f"VAT {invoice['tax_rate']:.0%}:", tax),
                         (f"Total due ({currency}):", total)):
        page.insert_text((330, y), label, fontname="hebo", fontsize=12)
        page.insert_text((480, y), f"{value:.2f}", fontname="helv", fontsize=12)
        y += 20

    footer = f"Please pay within 30 days. Reference {invoice['invoice_number']} with your payment."
    page.insert_text((LEFT, 760), footer, fontname="helv", fontsize=10)
    doc.set_metadata({"title": f"Invoice {invoice['invoice_number']}", "author": invoice["seller_name"],
                      "creator": "ocrserve examples/make_invoice.py", "producer": "PyMuPDF",
                      "creationDate": "D:20240314000000Z", "modDate": "D:20240314000000Z"})
    return doc.tobytes(garbage=4, deflate=True, no_new_id=True)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUT_PATH
    out.write_bytes(make_invoice_pdf())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
