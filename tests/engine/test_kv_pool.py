from __future__ import annotations

import random

import pytest
import torch

from engine.kv_pool import CACHE_OWNER, FREE, KVPool, KVPoolFullError

NUM_LAYERS, NUM_HEADS, HEAD_DIM = 2, 2, 4


def make_pool(num_slots: int = 16, debug: bool = False) -> KVPool:
    return KVPool(NUM_LAYERS, num_slots, NUM_HEADS, HEAD_DIM, dtype=torch.float32, debug=debug)


def rows(n: int, value: float) -> torch.Tensor:
    return torch.full((n, NUM_HEADS, HEAD_DIM), value)  # [n, heads, dim]


def test_alloc_free_transfer_track_owners():
    pool = make_pool(16)
    assert pool.num_free == 15 and pool.num_used == 0
    a = pool.alloc(4, owner=1)
    b = pool.alloc(3, owner=2)
    assert a.dtype == torch.int64 and a.tolist() == [1, 2, 3, 4]
    assert set(a.tolist()).isdisjoint(b.tolist())
    assert pool.owners(a).tolist() == [1] * 4 and pool.owners(b).tolist() == [2] * 3
    assert pool.num_free == 8 and pool.num_used == 7

    pool.transfer(a[:2], from_owner=1, to_owner=CACHE_OWNER)
    assert pool.owners(a).tolist() == [CACHE_OWNER] * 2 + [1] * 2
    pool.free(a[2:], owner=1)
    pool.free(a[:2], owner=CACHE_OWNER)
    assert pool.owners(a).tolist() == [FREE] * 4
    assert pool.num_free == 12 and pool.num_used == 3
    pool.check_invariants()


def test_alloc_zero_and_freed_slots_come_back():
    pool = make_pool(8)
    assert pool.alloc(0, owner=1).numel() == 0
    a = pool.alloc(5, owner=1)
    pool.free(a, owner=1)
    again = pool.alloc(5, owner=3)
    assert sorted(again.tolist()) == sorted(a.tolist())
    pool.check_invariants()


def test_alloc_beyond_capacity_returns_none_and_takes_nothing():
    pool = make_pool(8)
    held = pool.alloc(5, owner=1)
    assert pool.alloc(3, owner=2) is None
    assert pool.num_free == 2 and pool.num_used == 5
    assert pool.owners(held).tolist() == [1] * 5
    with pytest.raises(KVPoolFullError, match="2 free slots, 3 were needed"):
        pool.alloc_or_raise(3, owner=2)
    assert pool.alloc(2, owner=2).numel() == 2
    assert pool.num_free == 0 and pool.alloc(1, owner=2) is None
    pool.check_invariants()


def test_slot_zero_is_never_handed_out_or_freed():
    pool = make_pool(6)
    slots = pool.alloc(5, owner=1)
    assert 0 not in slots.tolist()
    assert pool.alloc(1, owner=1) is None  # slot 0 is not part of the capacity
    with pytest.raises(AssertionError):
        pool.free(torch.tensor([0]), owner=1)
    with pytest.raises(AssertionError):
        pool.transfer(torch.tensor([0]), from_owner=1, to_owner=CACHE_OWNER)
    pool.check_invariants()


def test_double_free_and_foreign_free_raise():
    pool = make_pool(8)
    a = pool.alloc(2, owner=1)
    b = pool.alloc(2, owner=2)
    with pytest.raises(AssertionError):
        pool.free(b, owner=1)  # not the owner
    with pytest.raises(AssertionError):
        pool.transfer(b, from_owner=1, to_owner=CACHE_OWNER)
    with pytest.raises(AssertionError):
        pool.free(torch.cat([a[:1], a[:1]]), owner=1)  # same slot twice in one call
    pool.free(a, owner=1)
    with pytest.raises(AssertionError):
        pool.free(a, owner=1)  # already free
    with pytest.raises(AssertionError):
        pool.free(torch.tensor([8]), owner=1)  # out of range
    assert pool.owners(b).tolist() == [2, 2]
    pool.check_invariants()


def test_write_and_gather_roundtrip_leaves_other_slots_alone():
    pool = make_pool(8)
    slots = pool.alloc(3, owner=1)
    k = torch.arange(3 * NUM_HEADS * HEAD_DIM, dtype=torch.float32).reshape(3, NUM_HEADS, HEAD_DIM)
    pool.write(1, slots, k, -k)
    got_k, got_v = pool.gather(1, slots)
    assert torch.equal(got_k, k) and torch.equal(got_v, -k)
    assert torch.count_nonzero(pool.k_cache[0]) == 0  # other layer untouched
    assert pool.k_cache.shape == (NUM_LAYERS, NUM_HEADS, 8, HEAD_DIM)


def test_debug_poisons_freed_slots_and_keeps_slot_zero_finite():
    pool = make_pool(8, debug=True)
    assert torch.isfinite(pool.k_cache[:, :, 0]).all() and torch.isfinite(pool.v_cache[:, :, 0]).all()
    slots = pool.alloc(3, owner=1)
    assert torch.isnan(pool.gather(0, slots)[0]).all()  # never written since alloc
    for layer in range(NUM_LAYERS):
        pool.write(layer, slots, rows(3, 1.0), rows(3, 2.0))
    assert torch.isfinite(pool.gather(1, slots)[1]).all()
    pool.free(slots[1:], owner=1)
    for layer in range(NUM_LAYERS):
        k, v = pool.gather(layer, slots)
        assert torch.equal(k[0], rows(1, 1.0)[0]) and torch.equal(v[0], rows(1, 2.0)[0])
        assert torch.isnan(k[1:]).all() and torch.isnan(v[1:]).all()


def test_debug_write_checks_owners():
    pool = make_pool(8, debug=True)
    mine = pool.alloc(2, owner=1)
    theirs = pool.alloc(2, owner=2)
    free_slot = pool.alloc(1, owner=1)
    pool.free(free_slot, owner=1)

    pool.write(0, mine, rows(2, 1.0), rows(2, 1.0), owner_ids=torch.tensor([1, 1]))
    mixed = torch.cat([mine[:1], theirs[:1], torch.tensor([0])])  # slot 0: padding, always allowed
    pool.write(0, mixed, rows(3, 1.0), rows(3, 1.0), owner_ids=torch.tensor([1, 2, 7]))
    with pytest.raises(AssertionError, match="owned by"):
        pool.write(0, theirs, rows(2, 1.0), rows(2, 1.0), owner_ids=torch.tensor([1, 1]))
    with pytest.raises(AssertionError, match="FREE"):
        pool.write(0, free_slot, rows(1, 1.0), rows(1, 1.0))
    with pytest.raises(AssertionError, match="FREE"):
        pool.write(0, free_slot, rows(1, 1.0), rows(1, 1.0), owner_ids=torch.tensor([1]))
    assert torch.isnan(pool.gather(0, free_slot)[0]).all()  # the refused write left no trace


def test_bytes_per_token():
    assert KVPool.bytes_per_token(2, 3, 8, torch.float32) == 2 * 2 * 3 * 8 * 4
    assert KVPool.bytes_per_token(28, 8, 128, torch.bfloat16) == 2 * 28 * 8 * 128 * 2
    pool = make_pool(10)
    per_token = KVPool.bytes_per_token(NUM_LAYERS, NUM_HEADS, HEAD_DIM, torch.float32)
    total = pool.k_cache.numel() * pool.k_cache.element_size() * 2
    assert total == per_token * pool.num_slots


def test_rejects_unusable_sizes():
    with pytest.raises(ValueError, match="at least 2 slots"):
        KVPool(1, 1, 1, 1)
    with pytest.raises(ValueError, match="positive"):
        KVPool(0, 4, 1, 1)


@pytest.mark.parametrize("seed", range(4))
def test_random_operations_keep_invariants(seed: int):
    rng = random.Random(seed)
    pool = make_pool(40)
    held: dict[int, list[int]] = {}  # owner -> slots it holds
    for _ in range(300):
        op = rng.random()
        owner = rng.randint(0, 5)
        if op < 0.45:
            n = rng.randint(0, 12)
            num_free_before = pool.num_free
            slots = pool.alloc(n, owner)
            assert (slots is None) == (n > num_free_before)
            if slots is None:
                assert pool.num_free == num_free_before
            else:
                held.setdefault(owner, []).extend(slots.tolist())
        elif op < 0.8 and held.get(owner):
            rng.shuffle(held[owner])
            k = rng.randint(1, len(held[owner]))
            gone, held[owner] = held[owner][:k], held[owner][k:]
            pool.free(torch.tensor(gone), owner)
        elif held.get(owner):
            to_owner = rng.randint(0, 5)
            k = rng.randint(1, len(held[owner]))
            moved, held[owner] = held[owner][:k], held[owner][k:]
            pool.transfer(torch.tensor(moved), owner, to_owner)
            held.setdefault(to_owner, []).extend(moved)
        pool.check_invariants()
        all_held = [s for slots in held.values() for s in slots]
        assert len(all_held) == len(set(all_held)) == pool.num_used
        assert pool.num_free + pool.num_used == pool.num_slots - 1
        for o, slots in held.items():
            assert bool((pool.owners(slots) == o).all())
