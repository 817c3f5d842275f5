"""Token-granular KV memory: one preallocated K and V tensor, a free list and an owner table.

Page size is 1: a *slot* holds the K and V of one token in every layer. The
pool is allocated once at start-up; requests and the radix cache borrow slots
from it and hand them back. Bookkeeping (free list, owner table) lives on the
CPU so that alloc/free never synchronise with the accelerator; slot ids are
CPU int64 tensors and the model runner moves them to the device per batch.
"""

from __future__ import annotations

import torch

CACHE_OWNER = 0  # slots held by the radix cache; requests use owner ids >= 1
FREE = -1  # owner value of a free slot
RESERVED = -2  # owner value of slot 0, the padding slot
PAD_SLOT = 0


class KVPoolFullError(RuntimeError):
    """Raised by `alloc_or_raise` when the pool has fewer free slots than asked for."""


class KVPool:
    """K/V storage for `num_slots` tokens across all layers, with one owner per slot.

    | invariant                                       | kept by                          |
    |-------------------------------------------------|----------------------------------|
    | slot 0 is never allocated, freed or transferred | free list starts at 1; asserts   |
    | a slot is FREE iff it is on the free list, once | alloc/free move ids list<->owner |
    | every other slot has exactly one owner (>= 0)   | alloc sets it, transfer swaps it |
    | only the owner frees or hands over a slot       | free/transfer assert the owner   |
    | (debug) a slot not written since alloc is NaN   | free and __init__ poison with NaN|
    | (debug) a write lands only on its owner's slots | write checks `owner_ids`         |

    Invariant 1 of DESIGN.md (a slot is free only when no writer can still touch
    it) is the caller's half of the contract: free only after the last write.
    Slot 0 stays finite because padded gathers read it (masked attention still
    multiplies its V by zero, and 0 * NaN would be NaN).
    """

    def __init__(
        self,
        num_layers: int,
        num_slots: int,
        num_kv_heads: int,
        head_dim: int,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
        debug: bool = False,
    ) -> None:
        if num_slots < 2:
            raise ValueError(f"KV pool needs at least 2 slots (slot 0 is reserved), got {num_slots}")
        if min(num_layers, num_kv_heads, head_dim) < 1:
            raise ValueError(
                f"KV pool dimensions must be positive: num_layers={num_layers}, "
                f"num_kv_heads={num_kv_heads}, head_dim={head_dim}"
            )
        self.num_layers = num_layers
        self.num_slots = num_slots
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.dtype = dtype
        self.device = torch.device(device)
        self.debug = debug
        # Head-major: a gather of many requests' slots comes out as [heads, tokens, dim],
        # which batched attention matmuls consume without another copy.
        shape = (num_layers, num_kv_heads, num_slots, head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype, device=self.device)  # [layers, heads, slots, dim]
        self.v_cache = torch.zeros(shape, dtype=dtype, device=self.device)
        if debug:
            self.k_cache[:, :, PAD_SLOT + 1 :] = float("nan")
            self.v_cache[:, :, PAD_SLOT + 1 :] = float("nan")
        # Free list as a stack: the top is the end of the live region [0, _num_free).
        # Stored high-to-low so the first allocations hand out 1, 2, 3, ...
        self._free_stack = torch.arange(num_slots - 1, PAD_SLOT, -1, dtype=torch.int64)
        self._num_free = num_slots - 1
        self._owners = torch.full((num_slots,), FREE, dtype=torch.int64)
        self._owners[PAD_SLOT] = RESERVED

    @staticmethod
    def bytes_per_token(num_layers: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype) -> int:
        """Bytes one token's K and V take across all layers."""
        itemsize = torch.empty((), dtype=dtype).element_size()
        return 2 * num_layers * num_kv_heads * head_dim * itemsize

    @property
    def num_free(self) -> int:
        return self._num_free

    @property
    def num_used(self) -> int:
        return self.num_slots - 1 - self._num_free

    def alloc(self, n: int, owner: int) -> torch.Tensor | None:
        """Take `n` free slots for `owner`; None (and nothing taken) if fewer are free."""
        assert n >= 0 and owner >= CACHE_OWNER, (n, owner)
        if n > self._num_free:
            return None
        start = self._num_free - n
        slots = self._free_stack[start : self._num_free].flip(0)  # flip copies; [n]
        self._num_free = start
        assert bool((self._owners[slots] == FREE).all()), "free list held a slot that is not FREE"
        self._owners[slots] = owner
        return slots

    def alloc_or_raise(self, n: int, owner: int) -> torch.Tensor:
        slots = self.alloc(n, owner)
        if slots is None:
            raise KVPoolFullError(f"KV pool has {self._num_free} free slots, {n} were needed")
        return slots

    def free(self, slots: torch.Tensor, owner: int) -> None:
        """Return `slots` (all owned by `owner`) to the free list; debug mode poisons them."""
        slots = self._as_slot_ids(slots)
        n = slots.numel()
        if n == 0:
            return
        self._assert_owned(slots, owner)
        self._owners[slots] = FREE
        # Pushed reversed so an immediate alloc(n) gives the same ids in the same order.
        self._free_stack[self._num_free : self._num_free + n] = slots.flip(0)
        self._num_free += n
        if self.debug:
            device_slots = slots.to(self.device)
            self.k_cache.index_fill_(2, device_slots, float("nan"))
            self.v_cache.index_fill_(2, device_slots, float("nan"))

    def transfer(self, slots: torch.Tensor, from_owner: int, to_owner: int) -> None:
        """Hand `slots` from one owner to another (a finished request's KV to the cache)."""
        assert to_owner >= CACHE_OWNER, to_owner
        slots = self._as_slot_ids(slots)
        if slots.numel() == 0:
            return
        self._assert_owned(slots, from_owner)
        self._owners[slots] = to_owner

    def owners(self, slots: torch.Tensor | list[int]) -> torch.Tensor:
        """Owner id of each slot (FREE, CACHE_OWNER, a request id, or RESERVED for slot 0)."""
        return self._owners[torch.as_tensor(slots, dtype=torch.int64).reshape(-1).cpu()]

    def write(
        self,
        layer: int,
        slots: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        owner_ids: torch.Tensor | None = None,
    ) -> None:
        """Store K/V rows `k`, `v` (each [n, kv_heads, head_dim]) into `slots` of `layer`.

        In debug mode each written slot must be slot 0 (padding) or owned by the
        matching entry of `owner_ids`; without `owner_ids` it must at least not be FREE.
        """
        assert k.shape == v.shape == (slots.shape[0], self.num_kv_heads, self.head_dim), (
            k.shape,
            v.shape,
            slots.shape,
        )
        if self.debug:
            self._check_write_owners(slots, owner_ids)
        device_slots = slots.to(self.device, non_blocking=True)
        self.k_cache[layer].index_copy_(1, device_slots, k.transpose(0, 1).to(self.dtype))
        self.v_cache[layer].index_copy_(1, device_slots, v.transpose(0, 1).to(self.dtype))

    def gather(self, layer: int, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V rows of `slots` in `layer`, each [n, kv_heads, head_dim]."""
        device_slots = slots.to(self.device, non_blocking=True)
        k = self.k_cache[layer].index_select(1, device_slots).transpose(0, 1)
        v = self.v_cache[layer].index_select(1, device_slots).transpose(0, 1)
        return k, v

    def check_invariants(self) -> None:
        live = self._free_stack[: self._num_free]
        assert self._owners[PAD_SLOT] == RESERVED, "slot 0 lost its reserved mark"
        assert bool((live > PAD_SLOT).all() and (live < self.num_slots).all()), "free list out of range"
        assert torch.unique(live).numel() == self._num_free, "free list holds a slot twice"
        assert bool((self._owners[live] == FREE).all()), "free list holds an owned slot"
        num_marked_free = int((self._owners == FREE).sum())
        assert num_marked_free == self._num_free, (num_marked_free, self._num_free)
        assert bool((self._owners >= RESERVED).all()), "owner table holds an unknown value"

    def _as_slot_ids(self, slots: torch.Tensor | list[int]) -> torch.Tensor:
        slots = torch.as_tensor(slots, dtype=torch.int64).reshape(-1).cpu()
        assert bool(((slots > PAD_SLOT) & (slots < self.num_slots)).all()), "slot id out of range or slot 0"
        return slots

    def _assert_owned(self, slots: torch.Tensor, owner: int) -> None:
        actual = self._owners[slots]
        wrong = actual != owner
        assert not bool(wrong.any()), (
            f"slots {slots[wrong][:8].tolist()} are owned by {actual[wrong][:8].tolist()}, not {owner}"
        )
        assert torch.unique(slots).numel() == slots.numel(), "the same slot appears twice"

    def _check_write_owners(self, slots: torch.Tensor, owner_ids: torch.Tensor | None) -> None:
        cpu_slots = slots.reshape(-1).to("cpu", torch.int64)
        actual = self._owners[cpu_slots]
        is_pad = cpu_slots == PAD_SLOT
        assert not bool(((actual == FREE) & ~is_pad).any()), (
            f"write to FREE slots {cpu_slots[(actual == FREE) & ~is_pad][:8].tolist()}"
        )
        if owner_ids is not None:
            expected = owner_ids.reshape(-1).to("cpu", torch.int64)
            wrong = (actual != expected) & ~is_pad
            assert not bool(wrong.any()), (
                f"write to slots {cpu_slots[wrong][:8].tolist()} owned by "
                f"{actual[wrong][:8].tolist()}, writers {expected[wrong][:8].tolist()}"
            )
