"""The engine's HTTP server: OpenAI-compatible API (and /v1/batch), /health, /metrics, /flush_cache.

Map of the package:
- `main` / `cli_args` / `settings`: the `ocrserve engine` command, its flags, and
  the one place every HTTP-side timeout is set.
- `app`: the FastAPI factory; `engine_lifecycle` loads the engine in the
  background (503 meanwhile) and shuts it down once.
- `deps`: shared context, API/admin key checks, readiness.
- `protocol`: request bodies; `sampling_request`: body -> SamplingParams;
  `chat_prompt` + `image_urls`: messages -> prompt via the chat template;
  `prompt_cache`: that prompt's text and ids, kept by message structure.
- `request_body`: capped, deadline-bound body reading; `request_lifetime`:
  deadline and client-disconnect watching; `generation`: one engine request,
  aborted on every early way out; `streaming`: SSE; `responses` +
  `logprobs_format`: OpenAI wire shapes; `api_errors`: OpenAI-shaped errors.
- `routes_chat`, `routes_completions`, `routes_admin`: thin handlers;
  `routes_batch`: POST /v1/batch, many chat completions in the OpenAI Batch API's file format.
"""
