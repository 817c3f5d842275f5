from __future__ import annotations

import pytest

from vision.limits import InvalidOptionError, PageSelectionError, VisionLimits
from vision.pages import parse_page_selection


@pytest.mark.parametrize("selection, expected", [
    ("1-5,8", [0, 1, 2, 3, 4, 7]),
    ("3", [2]),
    (" 2 - 4 , 10 ", [1, 2, 3, 9]),
    ("8,1-2,2,1", [0, 1, 7]),          # sorted, repeats dropped
    ("10-10", [9]),
    (None, list(range(10))),
    ("", list(range(10))),
    ("   ", list(range(10))),
])
def test_valid_selections(selection, expected):
    assert parse_page_selection(selection, num_pages=10) == expected


@pytest.mark.parametrize("selection, message", [
    ("abc", "cannot read"),
    ("1,,2", "(empty)"),
    ("1-", "cannot read"),
    ("-3", "cannot read"),
    ("1-2-3", "cannot read"),
    ("+1", "cannot read"),
    ("1.5", "cannot read"),
    ("1;2", "cannot read"),
    ("0", "numbered from 1"),
    ("0-3", "numbered from 1"),
    ("5-3", "backwards"),
    ("11", "out of range"),
    ("2-11", "out of range"),
    ("99999999999999999999999", "out of range"),
    ("\u0661", "cannot read"),        # an Arabic-Indic digit: int() would accept it
    ("1,2,", "(empty)"),
])
def test_garbage_is_refused_with_a_reason(selection, message):
    with pytest.raises(PageSelectionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_page_selection(selection, num_pages=10)


def test_out_of_range_message_names_the_page_count():
    with pytest.raises(PageSelectionError, match="page 3 is out of range: the document has 1 page$"):
        parse_page_selection("3", num_pages=1)


def test_huge_range_is_refused_without_being_expanded():
    with pytest.raises(PageSelectionError, match="out of range"):
        parse_page_selection("1-1000000000000", num_pages=10)


def test_overlong_selection_and_non_text_are_refused():
    limits = VisionLimits(max_page_selection_len=20)
    with pytest.raises(PageSelectionError, match="characters long"):
        parse_page_selection(",".join(["1"] * 20), num_pages=10, limits=limits)
    with pytest.raises(PageSelectionError, match="must be text"):
        parse_page_selection(5, num_pages=10)  # type: ignore[arg-type]


def test_page_dpi_is_lowered_to_respect_the_pixel_cap():
    limits = VisionLimits(max_page_pixels=4_000_000, render_dpi=150)
    assert limits.dpi_for_page(595, 842) == 150          # A4 at 150 DPI: 2.2M pixels, under the cap
    huge_dpi = limits.dpi_for_page(14400, 14400)         # the largest page PDF allows: 200 x 200 inches
    assert huge_dpi < 150
    side = int(14400 / 72 * huge_dpi) + 1                # a rendered side, rounded up
    assert side * side <= 4_000_000
    assert limits.dpi_for_page(595, 842, dpi=300) == pytest.approx(
        0.999 * (4_000_000 / (595 / 72 * 842 / 72)) ** 0.5)


@pytest.mark.parametrize("dpi", [0, -10, 601, float("nan"), float("inf"), "150"])
def test_bad_dpi_is_refused(dpi):
    with pytest.raises(InvalidOptionError, match="dpi"):
        VisionLimits().check_dpi(dpi)
