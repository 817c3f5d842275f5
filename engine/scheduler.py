"""Continuous batching: which requests run in the next step, and with how many tokens.

Every step: running requests decode (one token each) or continue their prefill
chunk; then waiting requests are admitted while the prefill token budget and
the pool allow. When the pool runs dry even after evicting unreferenced cache
entries, the most recently arrived running request is retracted: its K/V goes
to the radix cache (or back to the pool), and it rejoins the front of the
queue with everything that shapes its output kept (DESIGN invariant 4).

Drafting runs here too: before the requests are picked, each drafter drafts for the decoding
requests it serves at once (`_prepare_drafts`: a draft model runs its own engine's steps
there), and each request scheduled to reach its end takes its drafter's tokens to verify
(`_draft`), within the step's token budget. So the cost of drafting is the schedule phase's
of `Engine.step`; which drafter a request has was decided when it was built (engine/spec/policy.py).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import torch

from engine.config import EngineConfig
from engine.kv_pool import KVPool
from engine.radix_cache import RadixCache
from engine.request import Request, RequestStatus


@dataclass
class ScheduledBatch:
    requests: list[Request]
    extend_lens: list[int]     # new tokens each request runs this step
    sample: list[bool]         # whether the step reaches the request's end (a token is sampled)

    @property
    def num_tokens(self) -> int:
        return sum(self.extend_lens)


class Scheduler:
    def __init__(self, config: EngineConfig, pool: KVPool, cache: RadixCache | None, metrics=None):
        self.config = config
        self.pool = pool
        self.cache = cache
        self.metrics = metrics
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.num_retractions = 0

    # -- queue ---------------------------------------------------------------
    def add(self, req: Request) -> None:
        req.status = RequestStatus.WAITING
        self.waiting.append(req)

    def remove(self, req: Request) -> None:
        """Take a request out (finished or aborted) and give back its K/V."""
        if req in self.running:
            self.running.remove(req)
            self._release(req)
        elif req in self.waiting:
            self.waiting.remove(req)
        req.status = RequestStatus.FINISHED

    @property
    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    # -- the policy ------------------------------------------------------------
    def schedule(self) -> ScheduledBatch | None:
        budget = self.config.max_prefill_tokens
        batch = ScheduledBatch([], [], [])
        self._prepare_drafts()   # drafters' batch work for this step (a draft model's engine steps)
        for req in list(self.running):
            if req.status is not RequestStatus.RUNNING:
                continue  # retracted earlier in this loop
            pending = req.num_pending
            if pending == 1:
                # a decode step; drafted tokens verified with it count against the token budget
                spec, method = self._draft(req, budget)
                n, cost = 1 + len(spec), len(spec)
            else:
                n = min(pending, budget)
                if n == 0:
                    continue  # a prefill chunk waits for next step's budget
                # the chunk that ends the prompt verifies a draft of the first output tokens too
                spec, method = self._draft(req, budget - n) if n == pending else ([], "")
                n += len(spec)
                cost = n
            if not self._grow(req, n, batch):
                continue  # req itself was retracted
            budget -= cost
            self._hand_draft(req, spec, method)
            self._append(batch, req, n, sample=True if spec else None)
        self._admit(batch, budget)
        return batch if batch.requests else None

    def _admit(self, batch: ScheduledBatch, budget: int) -> None:
        if self.config.schedule_policy == "lpm" and self.cache is not None and len(self.waiting) > 1:
            lens = {id(r): self.cache.match_prefix(r.cache_key_ids[:-1], r.tenant).prefix_len for r in self.waiting}
            self.waiting = deque(sorted(self.waiting, key=lambda r: -lens[id(r)]))  # stable: FCFS among equals
        while self.waiting and budget > 0 and len(self.running) < self.config.max_running_requests:
            req = self.waiting[0]
            prefix_len, slots, node = 0, torch.empty(0, dtype=torch.int64), None
            if self.cache is not None:
                # At least one token must run through the model to produce logits.
                m = self.cache.match_prefix(req.cache_key_ids[:-1], req.tenant)
                prefix_len, slots, node = m.prefix_len, m.slots, m.node
                self.cache.lock(node)
            n = min(req.num_tokens - prefix_len, budget)
            # A prompt that runs whole this step verifies a draft of its first output tokens with it.
            spec, method = self._draft(req, budget - n) if n == req.num_tokens - prefix_len else ([], "")
            n += len(spec)
            # Keep one slot per running decode free, so admitting does not force a retraction next step.
            headroom = sum(1 for r in self.running if r.num_pending == 1)
            if not self._make_room(n + headroom):
                if node is not None:
                    self.cache.unlock(node)
                return
            new_slots = self.pool.alloc(n, req.owner_id)
            self.waiting.popleft()
            self._hand_draft(req, spec, method)
            req.kv_slots = torch.cat([slots, new_slots])
            req.num_computed = req.num_locked = prefix_len
            req.cache_node = node
            req.status = RequestStatus.RUNNING
            if req.num_cached_tokens < 0:  # first admission: report the prefix-cache hit
                req.num_cached_tokens = prefix_len
                if self.metrics is not None:
                    self.metrics.on_prefill_admitted(len(req.prompt_ids), prefix_len)
            self.running.append(req)
            self._append(batch, req, n, sample=True if spec else None)
            budget -= n

    def _prepare_drafts(self) -> None:
        """Let each drafter draft for its decoding requests at once (a draft model's batch)."""
        by_drafter: dict[int, tuple[object, list[Request]]] = {}
        for req in self.running:
            drafter = req.draft.drafter if req.draft is not None else None
            if (drafter is not None and req.params.speculative and req.status is RequestStatus.RUNNING
                    and req.num_pending == 1):
                preparer = drafter.preparer
                by_drafter.setdefault(id(preparer), (preparer, []))[1].append(req)
        for drafter, reqs in by_drafter.values():
            drafter.prepare(reqs)

    def _draft(self, req: Request, budget: int) -> tuple[list[int], str]:
        """Drafted tokens to verify after the request's pending ones this step, and the method that
        drafted them (none without a drafter, or for a request that asked for none)."""
        drafter = req.draft.drafter if req.draft is not None else None
        if drafter is None or not req.params.speculative:
            return [], ""
        room = req.max_output_len - len(req.output_ids) - 1
        k = min(drafter.num_tokens, budget, room)
        return drafter.draft(req, k) if k > 0 else ([], drafter.name)

    @staticmethod
    def _hand_draft(req: Request, spec: list[int], method: str) -> None:
        """The request verifies `spec` this step; its verdict is counted under `method`."""
        req.spec_ids = spec
        if req.draft is not None:
            req.draft.method = method

    def _append(self, batch: ScheduledBatch, req: Request, n: int, sample: bool | None = None) -> None:
        batch.requests.append(req)
        batch.extend_lens.append(n)
        batch.sample.append(req.num_computed + n == req.num_tokens if sample is None else sample)

    # -- memory ------------------------------------------------------------------
    def _make_room(self, n: int) -> bool:
        """Evict unreferenced cache entries until n slots are free; False if they cannot be."""
        short = n - self.pool.num_free
        if short > 0 and self.cache is not None:
            self.cache.evict(short)
        return self.pool.num_free >= n

    def _alloc(self, n: int, owner: int) -> torch.Tensor | None:
        return self.pool.alloc(n, owner) if self._make_room(n) else None

    def _grow(self, req: Request, n: int, batch: ScheduledBatch) -> bool:
        """Give a running request n more slots, retracting later arrivals if needed.
        Returns False if `req` itself had to be retracted."""
        while True:
            slots = self._alloc(n, req.owner_id)
            if slots is not None:
                req.kv_slots = torch.cat([req.kv_slots, slots])
                return True
            victims = [r for r in self.running if r not in batch.requests]
            victim = max(victims, key=lambda r: r.arrival_time)
            self.retract(victim)
            if victim is req:
                return False

    def retract(self, req: Request) -> None:
        self.running.remove(req)
        self._release(req)
        req.status = RequestStatus.WAITING
        req.num_retractions += 1
        self.num_retractions += 1
        self.waiting.appendleft(req)
        if self.metrics is not None:
            self.metrics.on_retract(1)

    def _release(self, req: Request) -> None:
        """Hand the request's computed K/V to the radix cache (or the pool)."""
        assert req.kv_slots.numel() >= req.num_computed
        if self.cache is not None:
            # A request that stopped inside a verified draft (a stop string, EOS, max_tokens) has K/V
            # for drafted tokens its output never took: that K/V is spare, not cacheable.
            num_kept = min(req.num_computed, len(req.cache_key_ids))
            computed = req.kv_slots[:num_kept]
            if num_kept > req.num_locked:
                self.cache.insert(req.cache_key_ids[:num_kept], computed, req.owner_id, req.tenant)
            self.cache.unlock(req.cache_node)
            spare = req.kv_slots[num_kept:]  # allocated for a step that never ran, or past the output
        else:
            spare = req.kv_slots
        if spare.numel():
            self.pool.free(spare, req.owner_id)
        req.kv_slots = torch.empty(0, dtype=torch.int64)
        req.num_computed = req.num_locked = 0
        req.cache_node = None

    def cache_progress(self, req: Request) -> None:
        """Insert a prefilling request's computed prefix into the cache so that
        requests arriving meanwhile can share it; the request switches to the
        cache's slots (duplicates of an equal prefix are freed by insert)."""
        if self.cache is None or req.num_computed <= req.num_locked:
            return
        key = req.cache_key_ids[: req.num_computed]
        self.cache.insert(key, req.kv_slots[: req.num_computed], req.owner_id, req.tenant)
        m = self.cache.match_prefix(key, req.tenant)
        assert m.prefix_len == req.num_computed, "a just-inserted prefix must match in full"
        self.cache.lock(m.node)
        self.cache.unlock(req.cache_node)
        req.cache_node = m.node
        req.kv_slots = torch.cat([m.slots, req.kv_slots[req.num_computed:]])
        req.num_locked = req.num_computed

    def kv_used_tokens(self) -> int:
        """Slots that cannot be reclaimed now: held by requests or locked in the cache."""
        evictable = self.cache.num_evictable_tokens if self.cache is not None else 0
        return self.pool.num_used - evictable
