"""Fixtures shared by the workers tests live in `service_harness` and `ocr_samples`
(imported by name: pytest puts this folder on sys.path)."""
