"""One upload through the intake, as fuzz_intake.py fuzzes it and test_intake_fuzz.py replays it.

Validation (`Upload.open`: what the API runs before accepting an upload) may refuse only with
a documented `vision.limits.InputError` that says why. Rendering (the worker's) may likewise
refuse a page only with one (`CorruptDocumentError`: the page is recorded as failed with its
message); any other exception out of `render_page` is a crash, a defect even though the worker
would record it too, and so is a hang or a memory blow-up, which libFuzzer's -timeout and
-rss_limit_mb catch (and the replay's pytest timeout).
"""
from __future__ import annotations

from vision.limits import InputError, VisionLimits
from workers.job_service import Upload

# Small caps, so a fuzzed header cannot make one input cost seconds of decoding.
LIMITS = VisionLimits(max_upload_bytes=4 << 20, max_pages=4, max_image_pixels=4_000_000, max_page_pixels=1_000_000)
NAMES = ("upload.pdf", "upload.png", "upload.jpg", "upload.tiff", "upload", "scan.PDF")

# Findings reported but not yet fixed, each pinned by an xfail(strict) test in test_intake_fuzz.py;
# passed over while fuzzing so the fuzzer keeps looking for new ones. Remove an entry when its fix
# lands. (None open: the invalid-page-count PDF, the first finding, is a CorruptDocumentError now.)
KNOWN_FINDINGS: tuple[tuple[type[BaseException], str], ...] = ()


def is_known(exc: BaseException) -> bool:
    return any(isinstance(exc, kind) and text in str(exc) for kind, text in KNOWN_FINDINGS)


def check_one(data: bytes, allow_known: bool = True) -> None:
    """The intake of one upload; raises only on a defect (a documented refusal returns)."""
    name = NAMES[data[0] % len(NAMES)] if data else NAMES[0]
    upload = Upload(name, data)
    upload.sha256()
    try:
        document = upload.open(LIMITS)
    except InputError as refusal:   # refused with a clear error
        assert str(refusal).strip(), f"{type(refusal).__name__} without a message"
        return
    except Exception as exc:        # crashed
        if allow_known and is_known(exc):
            return
        raise
    with document:
        assert 1 <= document.num_pages <= LIMITS.max_pages
        for index in range(min(document.num_pages, 2)):
            try:
                page = document.render_page(index, dpi=20)
            except InputError as refusal:   # the page refused with a clear error: recorded as failed
                assert str(refusal).strip(), f"{type(refusal).__name__} without a message"
                continue
            except Exception as exc:        # crashed
                if allow_known and is_known(exc):
                    continue
                raise
            assert page.image.width >= 1 and page.image.height >= 1
            assert page.image.width * page.image.height <= LIMITS.max_page_pixels
