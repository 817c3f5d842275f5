"""Rendering and analysing a page is the slow part of the vision tests (about
a second each on two cores), so each sample page is rendered and analysed once."""
from __future__ import annotations

import pytest
import vision_samples as samples

from vision.document import Document, RenderedPage
from vision.page_analysis import PageLayout, analyze_page


def _render(pdf: bytes) -> RenderedPage:
    with Document.open(pdf, filename="sample.pdf") as document:
        return document.render_page(0, dpi=samples.TEST_DPI)


@pytest.fixture(scope="session")
def one_column_page() -> RenderedPage:
    return _render(samples.one_column_pdf())


@pytest.fixture(scope="session")
def two_column_page() -> RenderedPage:
    return _render(samples.two_column_pdf())


@pytest.fixture(scope="session")
def header_footer_page() -> RenderedPage:
    return _render(samples.header_footer_pdf())


@pytest.fixture(scope="session")
def one_column_layout(one_column_page) -> PageLayout:
    return analyze_page(one_column_page.image, render_s=one_column_page.render_s)


@pytest.fixture(scope="session")
def two_column_layout(two_column_page) -> PageLayout:
    return analyze_page(two_column_page.image, render_s=two_column_page.render_s)


@pytest.fixture(scope="session")
def header_footer_layout(header_footer_page) -> PageLayout:
    return analyze_page(header_footer_page.image, render_s=header_footer_page.render_s)
