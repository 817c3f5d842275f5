"""GET /health, GET /metrics, GET /v1/models, POST /flush_cache.

/health and /metrics need no key (probes and scrapers; the engine binds to a
private address). /metrics answers while the model loads: every series exists
from start-up at zero.
"""
from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from engine.metrics import METRICS_CONTENT_TYPE
from engine.server.api_errors import ApiError
from engine.server.deps import get_context, require_admin_key, require_api_key, require_ready

router = APIRouter()


@router.get("/health")
async def health(request: Request) -> JSONResponse:
    await require_ready(request)
    return JSONResponse({"status": "ok"})


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    return Response(get_context(request).engine.metrics.render(), media_type=METRICS_CONTENT_TYPE)


@router.get("/v1/models", dependencies=[Depends(require_api_key), Depends(require_ready)])
async def list_models(request: Request) -> JSONResponse:
    context = get_context(request)
    models = [{
        "id": name,
        "object": "model",
        "created": context.created,
        "owned_by": "ocrserve",
        "max_model_len": context.engine.context_length,
    } for name in context.served_model_names()]
    return JSONResponse({"object": "list", "data": models})


@router.post("/flush_cache", dependencies=[Depends(require_admin_key), Depends(require_ready)])
async def flush_cache(request: Request) -> JSONResponse:
    # The engine hands the flush to its loop thread and may wait for a step boundary.
    flushed = await asyncio.to_thread(get_context(request).engine.flush_cache)
    if not flushed:
        raise ApiError(409, "the engine did not flush its prefix cache (the cache is disabled, or in use); "
                            "retry when the engine is idle", "cache_not_flushed")
    return JSONResponse({"flushed": True})
