"""Coverage-guided fuzzing (atheris, libFuzzer) of the document intake: the bytes of an upload as
the API's validation path reads them (`workers.job_service.Upload.open` -> `vision.Document.open`,
type by content, byte/page/pixel caps before decoding, encryption), then the first pages
rendered, as a worker does.

Run by tests/adversarial/test_intake_fuzz.py for a bounded time; by hand for longer:

    .venv/bin/python tests/adversarial/fuzz_intake.py -max_total_time=3600 -timeout=20 \\
        -rss_limit_mb=4096 -artifact_prefix=/tmp/intake- /tmp/intake-corpus tests/adversarial/corpus/seeds

What counts as a defect is in intake_check.py (validation may refuse only with a documented
`vision.limits.InputError`); an input that runs past `-timeout` seconds is a hang; past
`-rss_limit_mb`, a memory bomb. libFuzzer writes it
to `<artifact_prefix>crash-...` (or `timeout-`, `oom-`); keep it under corpus/crashes/ so
test_intake_fuzz.py replays it on every run.
"""
from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

with atheris.instrument_imports(include=["vision", "workers.job_service", "PIL"]):
    import vision.document  # noqa: F401 - instrumented here, before intake_check imports it
    import vision.images  # noqa: F401
    import workers.job_service  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parent))
from intake_check import check_one  # noqa: E402


def main() -> None:
    atheris.Setup(sys.argv, check_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
