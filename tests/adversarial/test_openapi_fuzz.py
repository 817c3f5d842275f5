"""Property-based fuzzing of both HTTP APIs with schemathesis: no 5xx, no hang, the service up after.

- the app: `ocrserve api` as a real process (keys mode, embedded broker), fuzzed from
  its own `/openapi.json`, every operation, positive and negative examples;
- the engine: `python -m engine.server` on a tiny random-weight Llama (fast to load
  and to generate). It serves no `/openapi.json` (closed on purpose), so its spec is
  written here from the same pydantic models its routes validate against
  (`engine/server/protocol.py`): chat completions, completions, models, health,
  metrics, flush_cache.

Each request has a client timeout (`REQUEST_TIMEOUT_S`): a hang is a failure, not a
stuck suite. After each API's operations, `/health` must still answer and the
process must be alive. Examples per operation: `EXAMPLES` x OCRSERVE_ADVERSARIAL_SCALE.
"""
from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from .conftest import report, scaled
from .services import ApiProcess, build_tiny_llama, service_env

pytestmark = pytest.mark.slow

EXAMPLES = scaled(50)
MIN_EXAMPLES = 20            # per operation that takes input, valid and invalid together (see check_coverage)
REQUEST_TIMEOUT_S = 60       # the client's: far past the servers' own request timeouts (a hang guard)
ENGINE_REQUEST_TIMEOUT_S = 20
API_KEY = "fuzz-api-key"
ENGINE_KEY = "fuzz-engine-key"
ENGINE_ADMIN_KEY = "fuzz-engine-admin"
FUZZ_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                         suppress_health_check=list(HealthCheck))


# ------------------------------------------------------------------------------------------ the app

@pytest.fixture(scope="module")
def api_process(tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz-api")
    env = service_env(data / "data", api_keys=API_KEY, max_upload_bytes=2_000_000, max_pages=5)
    api = ApiProcess(env, data / "api.log").wait_ready()
    yield api
    api.stop()


def run_examples(strategy, call, examples: dict[str, int], name: str) -> None:
    @given(case=strategy)
    @FUZZ_SETTINGS
    def run(case):
        examples[name] += 1
        call(case)

    run()


def fuzz(schema, call) -> dict[str, int]:
    """Every operation of `schema`, positive then negative examples, each sent through `call(case)`.

    Failures are collected per operation (hypothesis shrinks each to a minimal input) and
    reported together, so one run lists every finding; returns examples run per operation and
    mode. An operation that ran too few examples is a failure too (`check_coverage`): a
    strategy that cannot be satisfied would otherwise pass having sent nothing."""
    failures, examples, takes_input = [], {}, {}
    for result in schema.get_all_operations():
        operation = result.ok()
        label = f"{operation.method.upper()} {operation.path}"
        takes_input[label] = any(len(part) for part in (operation.path_parameters, operation.query,
                                                        operation.headers, operation.cookies, operation.body))
        for mode in GenerationMode:
            name = f"{label} ({mode.value})"
            examples[name] = 0

            try:
                run_examples(operation.as_strategy(generation_mode=mode), call, examples, name)
            except Unsatisfiable:
                continue      # nothing negative to generate (no parameters, or none that can be wrong)
            except (Exception, BaseExceptionGroup) as exc:      # noqa: BLE001 - collected, reported below
                failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:3000]}")
    failures += check_coverage(examples, takes_input)
    assert not failures, "\n\n".join(failures)
    return examples


def check_coverage(examples: dict[str, int], takes_input: dict[str, bool]) -> list[str]:
    """Too few examples per operation: at least one valid request each, and an operation that takes
    parameters or a body at least `MIN_EXAMPLES` in all (hypothesis stops early only when it has
    tried every distinct input, which a parameterless GET reaches at once)."""
    short = []
    for label, has_input in takes_input.items():
        positive = examples[f"{label} ({GenerationMode.POSITIVE.value})"]
        total = positive + examples[f"{label} ({GenerationMode.NEGATIVE.value})"]
        if positive < 1 or (has_input and total < MIN_EXAMPLES):
            short.append(f"{label}: only {positive} valid and {total - positive} invalid example(s) ran "
                         f"(at least 1 valid{f' and {MIN_EXAMPLES} in all' if has_input else ''})")
    return short


def fewest_per_operation(examples: dict[str, int]) -> str:
    totals: dict[str, int] = {}
    for name, count in examples.items():
        label = name.rsplit(" (", 1)[0]
        totals[label] = totals.get(label, 0) + count
    label = min(totals, key=totals.get)
    return f"{totals[label]} ({label})"


INT64_MAX = 2**63 - 1


def test_app_never_answers_5xx(api_process):
    schema = schemathesis.openapi.from_url(f"{api_process.base_url}/openapi.json")

    def call(case) -> None:
        response = case.call(base_url=api_process.base_url, headers={"Authorization": f"Bearer {API_KEY}"},
                             timeout=REQUEST_TIMEOUT_S)
        case.validate_response(response, checks=[not_a_server_error])

    examples = fuzz(schema, call)
    report("schemathesis (app)", operations=len(examples) // 2, examples=sum(examples.values()),
           fewest_per_operation=fewest_per_operation(examples))


def test_coverage_check_fails_an_operation_that_ran_too_few_examples():
    """What the old loop let pass: an operation whose valid examples were unsatisfiable ran nothing."""
    examples = {"POST /v1/jobs (positive)": 0, "POST /v1/jobs (negative)": 0,
                "GET /v1/jobs (positive)": 3, "GET /v1/jobs (negative)": 2,
                "GET /health (positive)": 1, "GET /health (negative)": 0}
    short = check_coverage(examples, {"POST /v1/jobs": True, "GET /v1/jobs": True, "GET /health": False})
    assert [line.split(":")[0] for line in short] == ["POST /v1/jobs", "GET /v1/jobs"], short


def test_app_huge_list_offset_is_a_4xx_not_a_500(api_process):
    """The fuzzer's finding: an offset past SQLite's signed 64-bit INTEGER was a 500 (OverflowError)."""
    answer = httpx.get(f"{api_process.base_url}/v1/jobs", params={"offset": str(INT64_MAX + 1), "limit": "5"},
                       headers={"Authorization": f"Bearer {API_KEY}"}, timeout=REQUEST_TIMEOUT_S)
    assert answer.status_code == 400 and "offset" in answer.text, answer.text


CRASH_INPUTS = sorted((Path(__file__).resolve().parent / "corpus" / "crashes").iterdir())


@pytest.mark.parametrize("path", CRASH_INPUTS, ids=lambda p: p.name)
def test_app_refuses_every_kept_crash_input_with_a_4xx(api_process, path):
    """The intake fuzzer's findings, uploaded for real: each that validation refuses is refused
    with a clear 4xx; one whose defect shows only when a page is rendered is taken (202), its
    page failed later by the worker with the reason."""
    from vision.limits import InputError
    from workers.job_service import Upload

    from .intake_check import LIMITS

    try:
        Upload(path.name, path.read_bytes()).open(LIMITS).close()
        refused = False
    except InputError:
        refused = True
    answer = httpx.post(f"{api_process.base_url}/v1/jobs", headers={"Authorization": f"Bearer {API_KEY}"},
                        files=[("files", (path.name, path.read_bytes(), "application/octet-stream"))],
                        timeout=REQUEST_TIMEOUT_S)
    if refused:
        assert 400 <= answer.status_code < 500, answer.text
    else:
        assert answer.status_code == 202, answer.text


def test_app_still_healthy_after_fuzzing(api_process):
    assert api_process.healthy(), api_process.log_text()
    log = api_process.log_text()
    assert "Traceback" not in log, log[-4000:]


# --------------------------------------------------------------------------------------- the engine

def engine_openapi() -> dict:
    """The engine's public routes, with request bodies from the models the routes validate against."""
    from engine.server.protocol import ChatCompletionRequest, CompletionRequest

    components: dict = {}

    def body(model) -> dict:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(schema.pop("$defs", {}))
        components[model.__name__] = schema
        return {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}

    answers = {"200": {"description": "ok"}, "400": {"description": "bad request"}}
    paths = {
        "/v1/chat/completions": {"post": {"operationId": "chat", "requestBody": body(ChatCompletionRequest),
                                          "responses": answers}},
        "/v1/completions": {"post": {"operationId": "completions", "requestBody": body(CompletionRequest),
                                     "responses": answers}},
        "/v1/models": {"get": {"operationId": "models", "responses": answers}},
        "/health": {"get": {"operationId": "health", "responses": answers}},
        "/metrics": {"get": {"operationId": "metrics", "responses": answers}},
        "/flush_cache": {"post": {"operationId": "flush", "responses": answers}},
    }
    return {"openapi": "3.1.0", "info": {"title": "ocrserve engine", "version": "1"}, "paths": paths,
            "components": {"schemas": components}}


@pytest.fixture(scope="module")
def engine_process(tmp_path_factory, smollm2_path):
    from .services import engine_server_class

    EngineServer = engine_server_class()   # noqa: N806 - the engine suites' own harness

    model = build_tiny_llama(tmp_path_factory.mktemp("fuzz-tiny-llama"), smollm2_path, vocab_size=49152)
    server = EngineServer(["--context-length", "256", "--kv-tokens", "1024", "--api-key", ENGINE_KEY,
                           "--admin-key", ENGINE_ADMIN_KEY, "--request-timeout", str(ENGINE_REQUEST_TIMEOUT_S),
                           "--max-request-bytes", str(256 * 1024), "--served-model-name", "tiny"],
                          model=str(model))
    server.start()
    try:
        server.wait_ready()
        yield server
    finally:
        exit_code = server.stop()
    assert exit_code == 0, server.stderr_text()


def test_engine_never_answers_5xx(engine_process):
    def call(case) -> None:
        key = ENGINE_ADMIN_KEY if case.path == "/flush_cache" else ENGINE_KEY
        response = case.call(base_url=engine_process.base_url, headers={"Authorization": f"Bearer {key}"},
                             timeout=REQUEST_TIMEOUT_S)
        # 503 is the engine's documented "busy, retry" answer, not a crash; any other 5xx is.
        if response.status_code == 503:
            assert response.json()["error"]["code"] in ("engine_overloaded", "model_loading"), response.text
            return
        case.validate_response(response, checks=[not_a_server_error])

    examples = fuzz(schemathesis.openapi.from_dict(engine_openapi()), call)
    report("schemathesis (engine)", operations=len(examples) // 2, examples=sum(examples.values()),
           fewest_per_operation=fewest_per_operation(examples))


def test_engine_still_healthy_after_fuzzing(engine_process):
    answer = httpx.get(f"{engine_process.base_url}/health", timeout=10)
    assert answer.status_code == 200 and engine_process.process.poll() is None
    chat = httpx.post(f"{engine_process.base_url}/v1/chat/completions", timeout=REQUEST_TIMEOUT_S,
                      headers={"Authorization": f"Bearer {ENGINE_KEY}"},
                      json={"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    assert chat.status_code == 200, chat.text
    assert "Traceback" not in engine_process.stderr_text(), engine_process.stderr_text()[-4000:]
    json.loads(chat.text)
