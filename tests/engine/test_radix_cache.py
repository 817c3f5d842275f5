from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
import torch

from engine.kv_pool import CACHE_OWNER, FREE, KVPool
from engine.radix_cache import MatchResult, RadixCache

NUM_HEADS, HEAD_DIM = 1, 2


def make_cache(num_slots: int = 64, share_across_tenants: bool = False) -> RadixCache:
    pool = KVPool(1, num_slots, NUM_HEADS, HEAD_DIM, debug=True)
    return RadixCache(pool, share_across_tenants=share_across_tenants)


def cache_request(cache: RadixCache, tokens: list[int], owner: int, tenant: str = "") -> torch.Tensor:
    """What a finished request does: alloc slots for its tokens and insert them."""
    slots = cache.pool.alloc(len(tokens), owner)
    cache.insert(tokens, slots, owner, tenant)
    return slots


# ---------------------------------------------------------------- unit tests


def test_insert_then_match_longest_prefix():
    cache = make_cache()
    slots = cache_request(cache, [1, 2, 3, 4], owner=1)
    assert cache.num_cached_tokens == 4 and cache.pool.num_used == 4
    assert cache.pool.owners(slots).tolist() == [CACHE_OWNER] * 4

    full = cache.match_prefix([1, 2, 3, 4, 5])
    assert isinstance(full, MatchResult) and full.prefix_len == 4
    assert torch.equal(full.slots, slots)
    assert cache.match_prefix([2, 3]).prefix_len == 0
    assert cache.match_prefix([]).prefix_len == 0
    partial = cache.match_prefix(torch.tensor([1, 2, 9]))  # tensors of token ids are accepted
    assert torch.equal(partial.slots, slots[:2])
    assert partial.node.key == [1, 2]  # the edge was split so the handle ends at the match
    cache.check_invariants()


def test_insert_counts_cached_prefix_and_frees_duplicates():
    cache = make_cache()
    first = cache_request(cache, [1, 2, 3], owner=1)
    second = cache.pool.alloc(4, owner=2)  # computed [1, 2, 3, 4] itself, without the cache
    assert cache.insert([1, 2, 3, 4], second, owner=2) == 3
    assert cache.pool.owners(second).tolist() == [FREE] * 3 + [CACHE_OWNER]
    assert torch.equal(cache.match_prefix([1, 2, 3, 4]).slots, torch.cat([first, second[3:]]))
    assert cache.insert([1, 2], first[:2], owner=3) == 2  # the tree's own slots are left alone
    assert cache.num_cached_tokens == cache.pool.num_used == 4
    cache.check_invariants()


def test_request_extending_its_match_caches_only_the_tail():
    cache = make_cache()
    cache_request(cache, [5, 6, 7], owner=1)
    match = cache.match_prefix([5, 6, 7, 8, 9])
    cache.lock(match.node)
    own = cache.pool.alloc(2, owner=2)
    assert cache.insert([5, 6, 7, 8, 9], torch.cat([match.slots, own]), owner=2) == 3
    cache.unlock(match.node)
    assert cache.pool.owners(own).tolist() == [CACHE_OWNER] * 2
    assert cache.num_cached_tokens == 5 and cache.num_locked_tokens == 0
    cache.check_invariants()


def test_insert_rejects_slots_the_request_does_not_own():
    cache = make_cache()
    cache_request(cache, [1, 2], owner=1)
    foreign = cache.pool.alloc(2, owner=7)
    with pytest.raises(AssertionError):
        cache.insert([1, 2], foreign, owner=2)  # duplicates, but not owner 2's to free
    with pytest.raises(AssertionError):
        cache.insert([3, 4], foreign, owner=2)  # new tail, but not owner 2's to hand over
    assert cache.pool.owners(foreign).tolist() == [7, 7]
    cache.check_invariants()


def test_split_after_lock_keeps_handle_and_counts():
    cache = make_cache()
    slots = cache_request(cache, [1, 2, 3, 4, 5], owner=1)
    match = cache.match_prefix([1, 2, 3, 4, 5])
    cache.lock(match.node)
    assert cache.num_locked_tokens == 5 and cache.num_evictable_tokens == 0

    cache_request(cache, [1, 2, 9], owner=2)  # splits the locked edge after [1, 2]
    assert match.node.key == [3, 4, 5] and match.node.parent.key == [1, 2]
    assert match.node.parent.lock_ref == match.node.lock_ref == 1
    assert cache.num_locked_tokens == 5 and cache.num_evictable_tokens == 1
    assert cache.evict(100) == 1  # only the unlocked [9] leaf can go
    assert torch.equal(cache.match_prefix([1, 2, 3, 4, 5]).slots, slots)
    assert cache.pool.owners(slots).tolist() == [CACHE_OWNER] * 5
    cache.check_invariants()

    cache.unlock(match.node)
    assert cache.num_locked_tokens == 0 and match.node.parent.lock_ref == 0
    assert cache.evict(100) == 5 and cache.num_cached_tokens == 0 and cache.pool.num_used == 0
    cache.check_invariants()


def test_lock_on_partial_match_protects_exactly_the_prefix():
    cache = make_cache()
    slots = cache_request(cache, [1, 2, 3, 4, 5], owner=1)
    match = cache.match_prefix([1, 2, 3, 8])
    cache.lock(match.node)
    assert cache.num_locked_tokens == 3
    assert cache.flush() == 2
    assert cache.pool.owners(slots).tolist() == [CACHE_OWNER] * 3 + [FREE] * 2
    assert torch.equal(cache.match_prefix([1, 2, 3, 4, 5]).slots, slots[:3])
    cache.unlock(match.node)
    with pytest.raises(AssertionError):
        cache.unlock(match.node)  # one unlock per lock
    cache.check_invariants()


def test_evict_least_recently_used_leaf_first_and_then_its_parent():
    cache = make_cache()
    a = cache_request(cache, [1, 1, 1], owner=1)
    b = cache_request(cache, [2, 2], owner=2)
    c = cache_request(cache, [3, 3, 3, 3], owner=3)
    cache.match_prefix([1, 1, 1])  # a becomes the most recently used
    assert cache.evict(1) == 2  # b: the oldest leaf goes whole
    assert cache.pool.owners(b).tolist() == [FREE] * 2
    assert cache.evict(3) == 4  # then c
    assert cache.pool.owners(a).tolist() == [CACHE_OWNER] * 3
    cache.check_invariants()

    d = cache_request(cache, [1, 1, 1, 4, 4], owner=4)  # child of a
    cache_request(cache, [2, 5], owner=5)  # newer than d
    assert cache.evict(4) == 5  # d's tail, then a (a leaf once its child is gone)
    assert cache.pool.owners(torch.cat([a, d[3:]])).tolist() == [FREE] * 5
    assert cache.num_cached_tokens == 2 and cache.match_prefix([2, 5]).prefix_len == 2
    cache.check_invariants()


def test_evicted_handle_cannot_be_locked():
    cache = make_cache()
    cache_request(cache, [1, 2], owner=1)
    match = cache.match_prefix([1, 2])
    cache.flush()
    with pytest.raises(AssertionError, match="evicted"):
        cache.lock(match.node)


def test_tenants_are_isolated_unless_shared():
    cache = make_cache()
    cache_request(cache, [1, 2, 3], owner=1, tenant="alice")
    assert cache.match_prefix([1, 2, 3], tenant="bob").prefix_len == 0
    assert cache.match_prefix([1, 2, 3]).prefix_len == 0
    bob = cache.pool.alloc(3, owner=2)
    assert cache.insert([1, 2, 3], bob, owner=2, tenant="bob") == 0  # its own copy
    assert torch.equal(cache.match_prefix([1, 2, 3], tenant="bob").slots, bob)
    assert cache.num_cached_tokens == 6
    cache.check_invariants()

    shared = make_cache(share_across_tenants=True)
    slots = cache_request(shared, [1, 2, 3], owner=1, tenant="alice")
    assert torch.equal(shared.match_prefix([1, 2, 3, 4], tenant="bob").slots, slots)
    shared.check_invariants()


def test_flush_keeps_locked_paths_only():
    cache = make_cache()
    kept = cache_request(cache, [1, 2], owner=1, tenant="t")
    cache_request(cache, [1, 2, 3], owner=2, tenant="t")
    cache_request(cache, [7, 8, 9], owner=3)
    match = cache.match_prefix([1, 2], tenant="t")
    cache.lock(match.node)
    assert cache.flush() == 4
    assert cache.num_cached_tokens == cache.num_locked_tokens == cache.pool.num_used == 2
    assert torch.equal(cache.match_prefix([1, 2, 3], tenant="t").slots, kept)
    cache.unlock(match.node)
    assert cache.flush() == 2 and cache.num_cached_tokens == 0
    cache.check_invariants()


# ------------------------------------------------- randomised, against an oracle


def canary(tenant_key: str, tokens: list[int]) -> list[float]:
    """Per position, a value determined by (tenant, prefix): what a correct K row holds."""
    value = sum(ord(ch) for ch in tenant_key) + 1
    values = []
    for token in tokens:
        value = (value * 1_000_003 + token + 1) % (1 << 20)  # exact in float32
        values.append(float(value))
    return values


@dataclass
class LiveRequest:
    owner: int
    tenant: str
    tokens: list[int]
    match: MatchResult
    own_slots: torch.Tensor  # slots for tokens[match.prefix_len:], owned by `owner`


class Oracle:
    """The cache as plain data: (tenant key, prefix) -> slot of the prefix's last token."""

    def __init__(self, cache: RadixCache) -> None:
        self.cache = cache
        self.slot_of: dict[tuple[str, tuple[int, ...]], int] = {}

    def tenant_key(self, tenant: str) -> str:
        return "" if self.cache.share_across_tenants else tenant

    def expected_match(self, tokens: list[int], tenant: str) -> list[int]:
        key, slots = self.tenant_key(tenant), []
        for i in range(len(tokens)):
            slot = self.slot_of.get((key, tuple(tokens[: i + 1])))
            if slot is None:
                break
            slots.append(slot)
        return slots

    def check_match(self, tokens: list[int], tenant: str) -> MatchResult:
        match = self.cache.match_prefix(tokens, tenant)
        assert match.slots.tolist() == self.expected_match(tokens, tenant)
        # Canary: the K rows found are the ones written for exactly this tenant and prefix.
        k_rows = self.cache.pool.gather(0, match.slots)[0][:, 0, 0]
        assert k_rows.tolist() == canary(self.tenant_key(tenant), tokens)[: match.prefix_len]
        return match

    def record_insert(self, tokens: list[int], slots: torch.Tensor, tenant: str) -> int:
        """Update for an insert; returns how many leading tokens were already cached."""
        num_cached = len(self.expected_match(tokens, tenant))
        for i in range(num_cached, len(tokens)):
            self.slot_of[(self.tenant_key(tenant), tuple(tokens[: i + 1]))] = int(slots[i])
        return num_cached

    def record_evict(self) -> int:
        """Drop entries whose slot the cache freed; returns how many went."""
        owners = self.cache.pool.owners(torch.tensor(list(self.slot_of.values()), dtype=torch.int64))
        pairs = zip(list(self.slot_of), owners.tolist())
        gone = [(key, owner) for key, owner in pairs if owner != CACHE_OWNER]
        for key, owner in gone:
            assert owner == FREE, "an evicted slot went to someone instead of the free list"
            del self.slot_of[key]
        return len(gone)

    def check_state(self, live: dict[int, LiveRequest]) -> None:
        cache, pool = self.cache, self.cache.pool
        cache.check_invariants()
        assert len(self.slot_of) == cache.num_cached_tokens
        held_by_requests = sum(r.own_slots.numel() for r in live.values())
        assert pool.num_used == cache.num_cached_tokens + held_by_requests, "a slot leaked"
        for tenant_key, prefix in self.slot_of:  # eviction only ever takes leaves
            assert len(prefix) == 1 or (tenant_key, prefix[:-1]) in self.slot_of
        locked = {
            (self.tenant_key(r.tenant), tuple(r.tokens[: i + 1]))
            for r in live.values()
            for i in range(r.match.prefix_len)
        }
        assert locked <= self.slot_of.keys(), "a locked prefix was evicted"
        assert cache.num_locked_tokens == len(locked)


def random_prompt(rng: random.Random, stems: list[list[int]]) -> list[int]:
    stem = rng.choice(stems)
    cut = rng.randint(0, len(stem))
    return stem[:cut] + [rng.randint(0, 3) for _ in range(rng.randint(0 if cut else 1, 8))]


def start_request(rng, cache, oracle, live, owner, stems) -> None:
    tenant, tokens = rng.choice(["a", "b"]), random_prompt(rng, stems)
    match = oracle.check_match(tokens, tenant)
    cache.lock(match.node)
    need = len(tokens) - match.prefix_len
    own = cache.pool.alloc(need, owner)
    if own is None:
        freed = cache.evict(need - cache.pool.num_free)
        assert oracle.record_evict() == freed
        own = cache.pool.alloc(need, owner)
    if own is None:
        cache.unlock(match.node)
        return
    k_rows = torch.tensor(canary(oracle.tenant_key(tenant), tokens)[match.prefix_len :])
    k_rows = k_rows.reshape(-1, 1, 1).expand(-1, NUM_HEADS, HEAD_DIM)  # [n, heads, dim]
    cache.pool.write(0, own, k_rows, k_rows, owner_ids=torch.full((need,), owner))
    live[owner] = LiveRequest(owner, tenant, tokens, match, own)


def finish_request(cache, oracle, request: LiveRequest) -> None:
    slots = torch.cat([request.match.slots, request.own_slots])
    expected = oracle.record_insert(request.tokens, slots, request.tenant)
    assert cache.insert(request.tokens, slots, request.owner, request.tenant) == expected
    assert not bool((cache.pool.owners(request.own_slots) == request.owner).any())
    cache.unlock(request.match.node)


@pytest.mark.parametrize("share_across_tenants", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_random_workload_matches_oracle(seed: int, share_across_tenants: bool):
    rng = random.Random(seed)
    cache = make_cache(num_slots=64, share_across_tenants=share_across_tenants)
    oracle = Oracle(cache)
    stems = [[rng.randint(0, 3) for _ in range(rng.randint(4, 24))] for _ in range(4)]
    live: dict[int, LiveRequest] = {}
    for step in range(400):
        op = rng.random()
        if op < 0.35 and len(live) < 6:
            start_request(rng, cache, oracle, live, owner=step + 1, stems=stems)
        elif op < 0.65 and live:
            finish_request(cache, oracle, live.pop(rng.choice(sorted(live))))
        elif op < 0.7 and live:
            request = live.pop(rng.choice(sorted(live)))  # abort: nothing is cached
            cache.pool.free(request.own_slots, request.owner)
            cache.unlock(request.match.node)
        elif op < 0.82:
            wanted, evictable = rng.randint(1, 20), cache.num_evictable_tokens
            freed = cache.evict(wanted)
            assert freed >= min(wanted, evictable) and freed <= evictable
            assert oracle.record_evict() == freed
        elif op < 0.99:
            oracle.check_match(random_prompt(rng, stems), rng.choice(["a", "b"]))
        else:
            freed = cache.flush()
            assert oracle.record_evict() == freed
            assert cache.num_cached_tokens == cache.num_locked_tokens
        oracle.check_state(live)

    for owner in sorted(live):
        finish_request(cache, oracle, live.pop(owner))
    assert cache.num_locked_tokens == 0
    cache.flush()
    oracle.record_evict()
    oracle.check_state(live)
    assert cache.num_cached_tokens == cache.pool.num_used == 0
