"""The page pipeline's parts: `page` (the state a page's stages share, and the
`Stage` contract), `text_layer_policy` (what a job's text-layer mode does, one
object chosen once), and one module per stage. The list of stages, in order,
is `workers.page_pipeline.STAGES`. This file imports nothing.
"""
