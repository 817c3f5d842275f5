"""The engine: admission and the schedule -> run -> decide -> process loop.
`engine.async_engine.AsyncEngine` runs it on a thread for asyncio callers."""
from __future__ import annotations

import dataclasses
import itertools
import threading
import uuid
from typing import Sequence

import torch
from transformers import AutoTokenizer

from engine.config import EngineConfig
from engine.errors import EngineStartupError, InvalidRequestError, PromptTooLongError
from engine.kv_pool import KVPool
from engine.loader import resolve_model
from engine.loop_guard import LoopGuard
from engine.model_config import ModelConfig
from engine.model_runner import _DTYPES, ModelRunner, free_device_memory, resolve_device
from engine.multimodal.config import MultimodalConfig
from engine.multimodal.image_decode import ImageData
from engine.process import StepProcessor
from engine.radix_cache import RadixCache
from engine.request import Request, RequestOutput
from engine.sampler import Sampler, SamplerState
from engine.sampling_params import SamplingParams
from engine.scheduler import Scheduler
from engine.spec import build_drafters, extra_kv_layers
from engine.spec.verify import decide
from engine.stop import StopChecker

__all__ = ["Engine", "EngineStartupError"]   # the latter lives in engine/errors.py


class Engine:
    """Synchronous core. Not thread-safe: one thread calls add_request/step/abort."""

    def __init__(self, config: EngineConfig, metrics=None, multimodal_config: MultimodalConfig | None = None):
        self.config = config
        self.metrics = metrics
        if config.num_threads:
            torch.set_num_threads(config.num_threads)
        path = resolve_model(config.model)
        self.model_path = path
        self.model_config = mc = ModelConfig.from_dir(path)
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        # A second instance for the engine thread: a Rust tokenizer used from two
        # threads at once can fail with "Already borrowed" (encode mutates its settings).
        self.detok_tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.vocab_size = mc.vocab_size
        self.context_length = min(config.context_length or mc.max_position_embeddings, mc.max_position_embeddings)
        self.eos_token_ids = set(mc.eos_token_ids)
        if self.tokenizer.eos_token_id is not None:
            self.eos_token_ids.add(self.tokenizer.eos_token_id)
        try:  # before any loading: asking for CUDA where there is none stops here
            self.device = resolve_device(config.device)
        except RuntimeError as e:
            raise EngineStartupError(str(e)) from e
        dtype = _DTYPES[config.dtype]
        # drafting may keep K/V of its own in the pool (MTP layers): said before anything is loaded
        self.num_pool_layers = mc.num_layers + extra_kv_layers(config, mc)
        per_token = KVPool.bytes_per_token(self.num_pool_layers, mc.num_kv_heads, mc.head_dim, dtype)
        if config.kv_tokens is not None:
            num_tokens = config.kv_tokens
        elif config.kv_memory_bytes is not None:
            num_tokens = config.kv_memory_bytes // per_token
        elif self.device.type == "cuda":
            num_tokens = None  # a share of the GPU memory left once the weights are loaded
        else:
            num_tokens = max(4 * self.context_length, 16384)
        if num_tokens is not None:
            self._check_pool_holds_context(num_tokens, per_token)
        self.multimodal_config = multimodal_config or MultimodalConfig()
        self.multimodal = None  # builds image requests; None: the model takes text only
        if mc.is_multimodal:
            from engine.multimodal.prompt_builder import MultimodalPromptBuilder

            self.multimodal = MultimodalPromptBuilder(path, mc, self.multimodal_config)
        self.runner = ModelRunner(path, mc, config.dtype, self.context_length, self.device,
                                  encoder_cache_bytes=self.multimodal_config.encoder_cache_bytes,
                                  attention_backend=config.attention_backend,
                                  cuda_graph_max_batch=config.cuda_graph_max_batch)
        if num_tokens is None:
            num_tokens = int(free_device_memory(self.device) * config.kv_memory_fraction) // per_token
            self._check_pool_holds_context(num_tokens, per_token)
        self.pool = KVPool(self.num_pool_layers, num_tokens + 1, mc.num_kv_heads, mc.head_dim, dtype,
                           self.device, debug=config.debug)  # +1: slot 0 is the reserved pad slot
        self.cache = (RadixCache(self.pool, config.share_prefix_cache_across_tenants)
                      if config.enable_prefix_cache else None)
        self.scheduler = Scheduler(config, self.pool, self.cache, metrics)
        self.sampler = Sampler(mc.vocab_size)
        self._grammar_backend = None  # started on the first constrained request (a compile worker process)
        self._grammar_lock = threading.Lock()
        self.requests: dict[str, Request] = {}
        self._owner_ids = itertools.count(1)
        self._seed_rng = torch.Generator().manual_seed(config.seed)
        self._seed_lock = threading.Lock()  # make_request runs on caller threads (image requests: a worker)
        # Speculative decoding and the model's rescoring (engine/spec/policy.py): which drafters
        # there are, which one each request gets; a draft model runs on an engine of its own.
        self.drafts = build_drafters(config, model=self.runner.model, pool=self.pool, model_config=mc,
                                     vocab_size=self.vocab_size, context_length=self.context_length,
                                     eos_token_ids=self.eos_token_ids, tokenizer=self.tokenizer,
                                     detok_tokenizer=self.detok_tokenizer, metrics=metrics, new_engine=Engine)
        self.num_steps = 0
        self.processor = StepProcessor(self.requests, self.scheduler, self.pool, self.metrics, self.drafts)

    # speculative decoding's counts (engine/spec/policy.py)
    num_draft_tokens = property(lambda self: self.drafts.num_draft_tokens)
    num_accepted_draft_tokens = property(lambda self: self.drafts.num_accepted_draft_tokens)
    num_rescored = property(lambda self: self.drafts.num_rescored)
    num_draft_chosen = property(lambda self: self.drafts.num_draft_chosen)

    def _check_pool_holds_context(self, num_tokens: int, per_token: int) -> None:
        if num_tokens < self.context_length:
            raise EngineStartupError(
                f"the KV pool holds {num_tokens} tokens ({num_tokens * per_token} bytes at {per_token} bytes "
                f"per token) but one request may need the full context of {self.context_length} tokens; "
                "give a larger --kv-tokens/--kv-memory or a smaller --context-length"
            )

    @property
    def supports_images(self) -> bool:
        return self.multimodal is not None

    # -- admission -------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        """A text prompt's token ids: the template already wrote any special tokens, none are added."""
        return self.tokenizer.encode(text, add_special_tokens=False)

    def make_request(self, prompt: str | Sequence[int], params: SamplingParams,
                     request_id: str | None = None, tenant: str = "",
                     images: Sequence[ImageData] | None = None) -> Request:
        """Validate and build a request (no engine state touched: callable from any thread).

        images: for a vision-language model, one per image placeholder in the prompt, in
        order (encoded bytes, or PIL images); the chat template writes the placeholder for a
        `{"type": "image"}` content part. Each placeholder is expanded to the image's tokens."""
        if not isinstance(params, SamplingParams):
            raise InvalidRequestError("params must be SamplingParams")
        params.validate(self.vocab_size)
        if isinstance(prompt, str):
            prompt_ids = self.tokenize(prompt)
        else:
            prompt_ids = [int(t) for t in prompt]
            bad = [t for t in prompt_ids if not 0 <= t < self.vocab_size]
            if bad:
                raise InvalidRequestError(f"prompt token ids must be in [0, {self.vocab_size}); got {bad[:5]}")
        if not prompt_ids:
            raise InvalidRequestError("the prompt is empty")
        limit = self.context_length - 1  # room for at least one generated token
        if len(prompt_ids) > limit:
            raise PromptTooLongError(len(prompt_ids), limit)
        multimodal = None
        if self.multimodal is not None:
            if images or self.multimodal.image_runs(prompt_ids):  # placeholders without images are refused too
                multimodal = self.multimodal.build(prompt_ids, list(images or ()))
                prompt_ids = multimodal.prompt_ids
                if len(prompt_ids) > limit:  # with every image's tokens counted
                    raise PromptTooLongError(len(prompt_ids), limit)
        elif images:
            raise InvalidRequestError(f"model {self.config.model!r} does not accept images", param="images")
        max_output_len = min(params.max_tokens, self.context_length - len(prompt_ids))
        # its drafter and drafts (no longer than its output can be), whether the model may rescore it
        # (engine/spec/policy.py)
        draft = self.drafts.new_state(params, multimodal, max_output_len)
        grammar_state = None
        if params.grammar is not None:
            # May block up to the compile timeout: AsyncEngine calls this off the event loop.
            grammar_state = self.grammar_backend().new_matcher(params.grammar)
        if params.seed is None:
            # Seeded here, once: a retracted request keeps the same random stream.
            with self._seed_lock:
                seed = int(torch.randint(0, 2**62, (1,), generator=self._seed_rng))
            params = dataclasses.replace(params, seed=seed)
        return Request(
            request_id=request_id or uuid.uuid4().hex,
            owner_id=next(self._owner_ids),
            prompt_ids=prompt_ids,
            params=params,
            sampler_state=SamplerState(params, prompt_ids, self.vocab_size),
            stop_checker=StopChecker(params, self.eos_token_ids, self.detok_tokenizer, prompt_ids),
            max_output_len=max_output_len,
            tenant=tenant,
            multimodal=multimodal,
            grammar_state=grammar_state,
            draft=draft,
            loop_guard=LoopGuard(params.loop_guard, max_output_len) if params.loop_guard is not None else None,
        )

    def grammar_backend(self):
        with self._grammar_lock:
            if self._grammar_backend is None:
                from engine.grammar import GrammarBackend

                self._grammar_backend = GrammarBackend(
                    self.tokenizer, self.vocab_size, max_cache_bytes=self.config.grammar_cache_bytes,
                    compile_timeout_s=self.config.grammar_compile_timeout_s,
                    stop_token_ids=sorted(self.eos_token_ids))
            return self._grammar_backend

    def close(self) -> None:
        if self._grammar_backend is not None:
            self._grammar_backend.close()
        self.drafts.close()

    def add_request(self, prompt, params: SamplingParams, request_id: str | None = None, tenant: str = "",
                    images: Sequence[ImageData] | None = None) -> Request:
        req = (prompt if isinstance(prompt, Request)
               else self.make_request(prompt, params, request_id, tenant, images))
        if req.request_id in self.requests:
            raise InvalidRequestError(f"request id {req.request_id!r} is already in use")
        self.requests[req.request_id] = req
        self.scheduler.add(req)
        if self.metrics is not None:
            self.metrics.on_request_arrived()
        return req

    def abort(self, request_id: str) -> RequestOutput | None:
        req = self.requests.pop(request_id, None)
        if req is None:
            return None
        self.scheduler.remove(req)
        req.finish_reason, req.aborted = "abort", True
        if self.metrics is not None:
            self.metrics.on_abort()
            self.metrics.on_request_finished(len(req.prompt_ids), len(req.output_ids), "abort")
        return req.take_output()

    # -- the loop ----------------------------------------------------------------
    @property
    def has_work(self) -> bool:
        return self.scheduler.has_work

    @torch.inference_mode()
    def step(self) -> list[RequestOutput]:
        """schedule -> run -> decide -> apply: the scheduler picks the requests and their drafted
        tokens (drafters draft there, a draft model's engine included), the model runs them,
        `decide` (engine/spec/verify.py) chooses each one's tokens, the drafting policy's
        `after_step` lets a drafter that reads the model's hidden states (MTP) draft for the next
        step while the step's K/V is still as the forward pass left it, and the processor
        (engine/process.py) appends them."""
        scheduled = self.scheduler.schedule()
        if scheduled is None:
            self._report_state()
            return []
        logits = self.runner.forward(scheduled, self.pool)
        self.num_steps += 1
        verdicts = decide(scheduled, logits, self.sampler)
        self.drafts.after_step(scheduled, verdicts)
        outputs = self.processor.apply(scheduled, verdicts)
        self._report_state()
        return outputs

    def _report_state(self) -> None:
        if self.metrics is not None:
            self.metrics.set_state(
                num_running=len(self.scheduler.running),
                num_waiting=len(self.scheduler.waiting),
                kv_used_tokens=self.scheduler.kv_used_tokens(),
                kv_total_tokens=self.pool.num_slots - 1,
                num_cached_tokens=self.cache.num_cached_tokens if self.cache is not None else 0,
            )

    def flush_cache(self) -> bool:
        self.runner.encoder_cache.clear()
        if self.multimodal is not None:
            self.multimodal.clear_cache()
        if self.cache is None:
            return False
        self.cache.flush()
        self._report_state()
        return True

    # -- convenience -------------------------------------------------------------
    def generate(self, prompts: Sequence[str | Sequence[int]] | str,
                 params: SamplingParams | Sequence[SamplingParams] | None = None,
                 tenant: str = "", images: Sequence[Sequence[ImageData] | None] | None = None) -> list[RequestOutput]:
        """Run prompts to completion together (continuous batching); outputs in prompt order.
        images[i]: the images of prompts[i] (see make_request)."""
        if isinstance(prompts, str) or (prompts and isinstance(prompts[0], int)):
            prompts = [prompts]
        params = params or SamplingParams()
        plist = list(params) if isinstance(params, Sequence) else [params] * len(prompts)
        ilist = list(images) if images is not None else [None] * len(prompts)
        reqs = [self.add_request(p, sp, tenant=tenant, images=im) for p, sp, im in zip(prompts, plist, ilist)]
        final: dict[str, RequestOutput] = {}
        while len(final) < len(reqs):
            for out in self.step():
                if out.finished:
                    final[out.request_id] = out
        return [final[r.request_id] for r in reqs]
