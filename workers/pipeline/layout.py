"""Stage: the page's layout regions, text lines and reading order (`vision.page_analysis`)."""
from __future__ import annotations

from vision.page_analysis import analyze_page
from workers.pipeline.page import BlockWork, PageWork, reads_by_lines


class Layout:
    name = "layout"
    timing = None   # vision times its own parts: render, layout, lines, order

    def run(self, page: PageWork) -> None:
        layout = analyze_page(page.rendered.image, num_threads=page.vision_num_threads,
                              render_s=page.rendered.render_s)
        page.layout = layout
        page.blocks = [BlockWork(block, reads_by_lines(block, page.recognizer)) for block in layout.blocks]
        page.timings.update(render=layout.timings.render_s, layout=layout.timings.layout_s,
                            lines=layout.timings.lines_s, order=layout.timings.order_s)
