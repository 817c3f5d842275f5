"""The engine: admission and the schedule -> run -> decide -> process loop.
`engine.async_engine.AsyncEngine` runs it on a thread for asyncio callers."""
from __future__ import annotations

import dataclasses
import functools
import itertools
import threading
import uuid
from typing import Sequence

import torch
from transformers import AutoTokenizer

from engine.config import EngineConfig
from engine.errors import InvalidRequestError, PromptTooLongError
from engine.kv_pool import KVPool
from engine.loader import resolve_model
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
from engine.spec import (DraftModelDrafter, Drafter, GrammarDrafter, ModelDrafter, MtpDrafter, NgramDrafter,
                         TextDrafter)
from engine.spec.verify import decide
from engine.stop import StopChecker


# The most tokens of a grammar's forced text drafted in one step (a JSON key with its quotes and colon).
GRAMMAR_DRAFT_TOKENS = 12


class EngineStartupError(RuntimeError):
    """The engine cannot run with this configuration (said before any request)."""


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
        # MTP drafts: each MTP layer keeps K/V of its own, one more layer of the pool
        if config.speculative_algorithm == "mtp" and mc.num_mtp_layers < 1:
            raise EngineStartupError(f"speculative algorithm mtp needs a model with multi-token-prediction layers; "
                                     f"{config.model!r} has none (num_nextn_predict_layers is 0)")
        self.num_pool_layers = mc.num_layers + (mc.num_mtp_layers if config.speculative_algorithm == "mtp" else 0)
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
        # Speculative decoding (engine/spec/): the model's own drafts where it makes them; for the
        # other greedy requests, when asked for, n-grams or a draft model (`text_drafter`).
        self.model_drafter = ModelDrafter(config.speculative_tokens) if config.speculative_tokens > 0 else None
        # a client's draft of the whole output (`draft_text`), for any request, as many tokens a step
        self.client_drafter = TextDrafter(config.speculative_tokens) if config.speculative_tokens > 0 else None
        self.draft_engine: Engine | None = None
        self.text_drafter: Drafter | None = None
        if config.speculative_algorithm == "ngram":
            self.text_drafter = NgramDrafter(config.draft_tokens, config.ngram_min, config.ngram_max)
        elif config.speculative_algorithm == "draft_model":
            self.draft_engine = self._start_draft_engine(config)
            self.text_drafter = DraftModelDrafter(config.draft_tokens, self.draft_engine, self.vocab_size)
        elif config.speculative_algorithm == "mtp":
            self.text_drafter = MtpDrafter(config.draft_tokens, self.runner.model, self.pool)
        # constrained requests: the grammar's forced text first (up to a JSON key and its quotes)
        self.grammar_drafter = (GrammarDrafter(max(config.draft_tokens, GRAMMAR_DRAFT_TOKENS), self._draft_encoder(),
                                               self.text_drafter) if self.text_drafter is not None else None)
        self.num_steps = 0
        self.processor = StepProcessor(self.requests, self.scheduler, self.pool, self.runner.model, self.metrics,
                                       self.eos_token_ids, self.detok_tokenizer)

    # the processor's counts (engine/process.py)
    num_draft_tokens = property(lambda self: self.processor.num_draft_tokens)
    num_accepted_draft_tokens = property(lambda self: self.processor.num_accepted_draft_tokens)
    num_rescored = property(lambda self: self.processor.num_rescored)
    num_draft_chosen = property(lambda self: self.processor.num_draft_chosen)

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

    def _start_draft_engine(self, config: EngineConfig) -> Engine:
        """The draft model on an engine of its own, same device, dtype and context; its tokenizer
        must be the target's (drafted ids are the target's ids)."""
        draft = Engine(EngineConfig(
            model=config.draft_model, context_length=self.context_length, kv_tokens=config.draft_kv_tokens,
            device=config.device, dtype=config.dtype, seed=config.seed, debug=config.debug,
            speculative_tokens=0, speculative_algorithm="none", ctc_rescoring=False,
            attention_backend=config.attention_backend))
        if draft.tokenizer.get_vocab() != self.tokenizer.get_vocab():
            draft.close()
            raise EngineStartupError(f"the draft model {config.draft_model!r} has another tokenizer than "
                                     f"{config.model!r}; a draft model must share the target's token ids")
        if draft.supports_images:
            draft.close()
            raise EngineStartupError(f"the draft model {config.draft_model!r} takes images; give a text model")
        return draft

    def _draft_encoder(self):
        """text -> token ids for drafts, on the engine thread: with the engine thread's own tokenizer
        (`detok_tokenizer`; prompts are tokenised with the shared one on another thread), memoised,
        since a schema's forced texts repeat from request to request."""
        encode = self.detok_tokenizer.encode
        return functools.lru_cache(maxsize=4096)(lambda text: tuple(encode(text, add_special_tokens=False)))

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
        draft_ids = None
        # Rescoring needs the draft too, with or without speculative decoding; a request with stop
        # conditions of its own keeps plain greedy output (its text may end before the draft's).
        model = self.runner.model      # its hooks: engine/models/hooks.py
        rescore = (self.config.ctc_rescoring and model.rescores_output
                   and not (params.stop or params.stop_regex or params.stop_token_ids or params.ignore_eos))
        if multimodal is not None and (self.config.speculative_tokens > 0 or rescore) and params.allows_draft:
            draft_ids = model.draft_tokens(multimodal)
        drafter: Drafter | None = None
        text_draft_ids = None
        if params.draft_text is not None and self.client_drafter is not None:
            # The client's expected output (a text layer's line) is the draft, not the model's own,
            # which still serves rescoring. Any request: verification is exact for all of them.
            text_draft_ids = self.tokenize(params.draft_text) + list(self.model_config.eos_token_ids[:1])
            drafter = self.client_drafter
        elif draft_ids is not None:
            drafter = self.model_drafter          # None with speculative_tokens=0: rescoring only
        elif self.text_drafter is not None:
            # Any request: verification replays a grammar's mask and penalties' counts position by
            # position, and keeps a sampled request's drafts by rejection sampling
            # (engine/spec/verify.py).
            drafter = self.text_drafter if params.grammar is None else self.grammar_drafter
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
            max_output_len=min(params.max_tokens, self.context_length - len(prompt_ids)),
            tenant=tenant,
            multimodal=multimodal,
            grammar_state=grammar_state,
            draft_ids=draft_ids,
            text_draft_ids=text_draft_ids,
            drafter=drafter,
            rescore=rescore and draft_ids is not None,
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
        if self.draft_engine is not None:
            self.draft_engine.close()

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
        """schedule -> run -> decide -> (draft) -> apply: the scheduler picks the requests and their
        drafted tokens, the model runs them, `decide` (engine/spec/verify.py) chooses each one's
        tokens, a drafter that reads the model's hidden states drafts for the next step while
        the step's K/V is still as the forward pass left it, and the processor (engine/process.py) appends them."""
        scheduled = self.scheduler.schedule()
        if scheduled is None:
            self._report_state()
            return []
        starts = [r.num_computed for r in scheduled.requests]
        logits = self.runner.forward(scheduled, self.pool)
        self.num_steps += 1
        verdicts = decide(scheduled, logits, self.sampler)
        if self.text_drafter is not None:
            self.text_drafter.after_step(scheduled, starts, verdicts)
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
