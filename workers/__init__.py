"""The document pipeline and the Celery tasks that run it. Imports `vision`;
talks to the engine only over HTTP (OpenAI chat completions); never imports
`engine` or torch.

- `settings`: every OCRSERVE_* setting of the service, one pydantic `Settings`.
- `data_dir`: where uploads, results, the job store and the embedded broker live.
- `job_model`, `job_store`: jobs, files, pages and their results in one SQLite file.
- `job_service`: submit (all input checks, before any heavy work), read, cancel.
- `celery_app`, `embedded_broker`: the Celery app on Redis or on embedded SQLite.
- `tasks`, `job_runner`: job -> pages chord -> finish; retries, fallbacks, results.
- `recovery`: re-queueing unfinished jobs when the embedded-broker worker starts.
- `recognizers/`: crops in, text out (`base` the protocol, `registry` the table of them,
  `openai_compatible`, `tesseract`, and `last_attempt` for a page task's last try).
- `tenant`: the job owner's prefix-cache tenant for every engine request.
- `page_pipeline`, `pipeline/`: one page as a list of named stages over its state:
  layout -> layer match -> plan crops -> recognise -> assemble -> figures -> structure.
- `page_result`, `text_layer_fallback`: a page's regions, ok / fallback / failed.
- `structure` (`structure_blocks`, `_rows`, `_text`, `_code`): each region's headings,
  paragraphs, lists, code, equations and captions, from its line boxes and text.
- `document_result`, `searchable_pdf`: the JSON, Markdown, text and PDF outputs.
"""
