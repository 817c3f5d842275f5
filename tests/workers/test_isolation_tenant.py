"""A job's engine requests run in its owner's prefix-cache tenant: the runner opens the owner's
scope around recognition (and extraction), so `OpenAIVisionRecognizer` and the extraction client
put the owner's keyed-hash tenant in every body they build (their side is tested against the real
engine in tests/engine/server/test_auth_engine.py). Real vision models and real Tesseract here;
a recogniser that notes the tenant in force when each page's crops are sent."""
from __future__ import annotations

import ocr_samples as samples
from workers.job_runner import JobRunner
from workers.job_service import JobService, Upload
from workers.recognizers.tesseract import TesseractRecognizer
from workers.settings import Settings
from workers.tenant import current_owner


class TenantNotingTesseract(TesseractRecognizer):
    def __init__(self) -> None:
        super().__init__()
        self.tenants: list[str | None] = []

    def recognize(self, items):
        self.tenants.append(current_owner())
        return super().recognize(items)


def test_each_job_is_recognised_in_its_owners_tenant(tmp_path):
    settings = Settings(data_dir=tmp_path, recognizer="tesseract", render_dpi=100, vision_num_threads=1)
    service = JobService(settings)
    recogniser = TenantNotingTesseract()
    runner = JobRunner(settings, recogniser)
    for owner in ("alice", "bob"):
        job = service.submit(owner, [Upload("report.pdf", samples.multi_page_pdf(1))], text_layer="never")
        before = len(recogniser.tenants)
        for file_index, page_index in runner.start_job(job.id):
            assert runner.run_page(job.id, file_index, page_index, final_attempt=True) == "done"
        assert runner.finish_job(job.id)
        seen = set(recogniser.tenants[before:])
        assert seen == {owner}, seen   # keyed into its tenant by the engine clients
    assert current_owner() is None, "the scope ends with the page"
