"""Recognisers: crops in, text out. `base` says what one is (the `Recognizer`
protocol, items, outcomes, the two errors); `registry` names the ones there are
and builds the configured one; `openai_compatible` and `tesseract` are the
implementations; `last_attempt` is how a page task gives up on an unreachable
one. This file imports nothing, so importing any of them never imports the rest.
"""
