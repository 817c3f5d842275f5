"""Radix-tree prefix cache: token-id prefixes -> the KV slots that already hold them.

Page size is 1, so every edge is cut at token granularity. Each tenant has its
own subtree (its own root), which is what salting prefix-cache entries per
tenant means here: a lookup only ever walks the caller's tenant's tree.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from engine.kv_pool import CACHE_OWNER, KVPool

_EMPTY_SLOTS = torch.empty(0, dtype=torch.int64)
_SHARED_TENANT = ""


class RadixNode:
    """One edge of the tree: a run of token ids and the slot of each of them."""

    __slots__ = (
        "key", "slots", "parent", "children", "lock_ref", "last_access", "node_id", "is_root", "is_detached",
    )
    _ids = itertools.count()

    def __init__(
        self, key: list[int], slots: torch.Tensor, parent: RadixNode | None, last_access: int = 0
    ) -> None:
        self.key = key  # token ids on this edge
        self.slots = slots  # [len(key)] int64, CPU
        self.parent = parent
        self.children: dict[int, RadixNode] = {}  # first token id -> child
        self.lock_ref = 0  # locks held on this node or on any descendant
        self.last_access = last_access
        self.node_id = next(RadixNode._ids)  # tie-break for the LRU heap
        self.is_root = parent is None
        self.is_detached = False  # set once evicted; a detached node can no longer be locked

    def __repr__(self) -> str:
        return f"RadixNode(id={self.node_id}, len={len(self.key)}, lock_ref={self.lock_ref})"


@dataclass(frozen=True)
class MatchResult:
    slots: torch.Tensor  # [prefix_len] int64 KV slots of the matched prefix, in token order
    node: RadixNode  # deepest matched node (handle for lock/unlock); the tenant's root when nothing matched

    @property
    def prefix_len(self) -> int:
        return int(self.slots.numel())


class RadixCache:
    """Prefix cache shared by all requests; the slots it holds are owned by CACHE_OWNER in the pool.

    | invariant                                                   | kept by                       |
    |-------------------------------------------------------------|-------------------------------|
    | every slot in the tree is owned by CACHE_OWNER, once        | insert transfers; evict frees |
    | no CACHE_OWNER slot exists outside the tree                 | only insert/evict touch them  |
    | lock_ref(node) >= sum of its children's lock_ref            | lock/unlock walk to the root  |
    | a node with lock_ref > 0 is never evicted                   | evict takes unlocked leaves   |
    | a locked handle keeps its slots across later splits         | the split node stays the tail |
    | last_access(parent) >= last_access(child)                   | touches stamp the whole path  |
    | tenants never share nodes unless share_across_tenants       | one root per tenant           |

    Splitting keeps handles valid: the node object that is split keeps the
    deeper part of its key, and a new node holding the head is put above it
    with the same lock count, so every lock that passed through the old node
    still passes through both halves and unlock walks the same path back.
    """

    def __init__(self, pool: KVPool, share_across_tenants: bool = False) -> None:
        self.pool = pool
        self.share_across_tenants = share_across_tenants
        self._roots: dict[str, RadixNode] = {}
        self._clock = 0  # logical time for LRU; deterministic, unlike wall time
        self._num_cached = 0
        self._num_locked = 0

    @property
    def num_cached_tokens(self) -> int:
        return self._num_cached

    @property
    def num_evictable_tokens(self) -> int:
        return self._num_cached - self._num_locked

    @property
    def num_locked_tokens(self) -> int:
        return self._num_locked

    def match_prefix(self, token_ids: Sequence[int], tenant: str = "") -> MatchResult:
        """Longest cached prefix of `token_ids`; splits the last node so the handle ends at the match."""
        tokens = _as_token_list(token_ids)
        root = self._roots.get(self._tenant_key(tenant))
        if root is None:
            return MatchResult(torch.empty(0, dtype=torch.int64), RadixNode([], _EMPTY_SLOTS, None))
        self._clock += 1
        node, pos, matched = root, 0, []
        while pos < len(tokens):
            child = node.children.get(tokens[pos])
            if child is None:
                break
            n = _common_len(child.key, tokens, pos)
            child.last_access = self._clock
            if n < len(child.key):
                child = self._split(child, n)
            matched.append(child.slots)
            node, pos = child, pos + n
        slots = torch.cat(matched) if matched else torch.empty(0, dtype=torch.int64)
        return MatchResult(slots, node)

    def insert(self, token_ids: Sequence[int], slots: torch.Tensor, owner: int, tenant: str = "") -> int:
        """Cache `token_ids` whose K/V sit in `slots` (owned by `owner`, or already the tree's).

        Returns how many leading tokens were already cached. For those positions
        a slot of `owner` that differs from the tree's is a duplicate and is
        freed here, so the caller must not write it again (re-match to get the
        tree's slots). The new tail's slots pass from `owner` to CACHE_OWNER.
        """
        assert owner != CACHE_OWNER, "insert takes slots from a request, not from the cache"
        tokens = _as_token_list(token_ids)
        slots = slots.reshape(-1).to("cpu", torch.int64)
        assert slots.numel() == len(tokens), (slots.numel(), len(tokens))
        tenant_key = self._tenant_key(tenant)
        root = self._roots.get(tenant_key)
        if root is None:
            root = self._roots[tenant_key] = RadixNode([], _EMPTY_SLOTS, None)
        self._clock += 1
        node, pos = root, 0
        while pos < len(tokens):
            child = node.children.get(tokens[pos])
            if child is None:
                break
            n = _common_len(child.key, tokens, pos)
            self._free_duplicates(child.slots[:n], slots[pos : pos + n], owner)
            child.last_access = self._clock
            pos += n
            if pos == len(tokens):
                break  # the whole sequence is already cached; no need to cut the edge
            if n < len(child.key):
                child = self._split(child, n)
            node = child
        num_already_cached = pos
        if pos < len(tokens):
            tail = slots[pos:].clone()
            self.pool.transfer(tail, owner, CACHE_OWNER)
            leaf = RadixNode(tokens[pos:], tail, node, last_access=self._clock)
            node.children[tokens[pos]] = leaf
            self._num_cached += len(leaf.key)
        return num_already_cached

    def lock(self, node: RadixNode) -> None:
        """Protect `node` and its ancestors from eviction until the matching unlock."""
        assert not node.is_detached, "locking an evicted node"
        while not node.is_root:
            if node.lock_ref == 0:
                self._num_locked += len(node.key)
            node.lock_ref += 1
            node = node.parent

    def unlock(self, node: RadixNode) -> None:
        assert not node.is_detached, "unlocking an evicted node (it was evicted while locked?)"
        while not node.is_root:
            assert node.lock_ref > 0, f"unlock without lock on {node}"
            node.lock_ref -= 1
            if node.lock_ref == 0:
                self._num_locked -= len(node.key)
            node = node.parent

    def evict(self, num_tokens: int) -> int:
        """Free at least `num_tokens` slots from unlocked leaves, least recently used first."""
        if num_tokens <= 0:
            return 0
        heap = [(n.last_access, n.node_id, n) for n in self._iter_nodes() if _is_evictable_leaf(n)]
        heapq.heapify(heap)
        num_freed = 0
        while heap and num_freed < num_tokens:
            _, _, leaf = heapq.heappop(heap)
            parent = leaf.parent
            num_freed += self._remove_leaf(leaf)
            if _is_evictable_leaf(parent):
                heapq.heappush(heap, (parent.last_access, parent.node_id, parent))
        self._drop_empty_roots()
        return num_freed

    def flush(self) -> int:
        """Drop every unlocked entry; locked paths stay. Returns the number of slots freed."""
        return self.evict(self._num_cached)

    def check_invariants(self) -> None:
        num_cached, num_locked, all_slots = 0, 0, []
        for root in self._roots.values():
            assert root.is_root and not root.key and root.lock_ref == 0 and root.parent is None
        for node in self._iter_nodes():
            assert not node.is_root and not node.is_detached, node
            assert len(node.key) > 0 and node.slots.numel() == len(node.key), node
            assert node.parent.children.get(node.key[0]) is node, "child keyed by the wrong token"
            assert node.lock_ref >= sum(c.lock_ref for c in node.children.values()), node
            if not node.parent.is_root:
                assert node.parent.last_access >= node.last_access, node
            num_cached += len(node.key)
            num_locked += len(node.key) if node.lock_ref > 0 else 0
            all_slots.append(node.slots)
        assert num_cached == self._num_cached, (num_cached, self._num_cached)
        assert num_locked == self._num_locked, (num_locked, self._num_locked)
        slots = torch.cat(all_slots) if all_slots else _EMPTY_SLOTS
        assert torch.unique(slots).numel() == slots.numel(), "a slot is cached twice"
        assert bool((self.pool.owners(slots) == CACHE_OWNER).all()), "tree holds a slot it does not own"
        all_owners = self.pool.owners(torch.arange(self.pool.num_slots))
        num_cache_owned = int((all_owners == CACHE_OWNER).sum())
        assert num_cache_owned == num_cached, "a CACHE_OWNER slot lies outside the tree"
        self.pool.check_invariants()

    def _tenant_key(self, tenant: str) -> str:
        return _SHARED_TENANT if self.share_across_tenants else tenant

    def _split(self, node: RadixNode, n: int) -> RadixNode:
        """Cut `node`'s edge after `n` tokens; returns the new head node, `node` keeps the tail."""
        assert 0 < n < len(node.key)
        head = RadixNode(node.key[:n], node.slots[:n].clone(), node.parent, node.last_access)
        head.lock_ref = node.lock_ref  # every lock through node also passes through its head
        head.children[node.key[n]] = node
        node.parent.children[node.key[0]] = head
        node.key, node.slots, node.parent = node.key[n:], node.slots[n:].clone(), head
        return head

    def _free_duplicates(self, tree_slots: torch.Tensor, request_slots: torch.Tensor, owner: int) -> None:
        duplicates = request_slots[request_slots != tree_slots]
        self.pool.free(duplicates, owner)  # asserts the request owns every one of them

    def _remove_leaf(self, leaf: RadixNode) -> int:
        assert _is_evictable_leaf(leaf), leaf
        self.pool.free(leaf.slots, CACHE_OWNER)
        del leaf.parent.children[leaf.key[0]]
        self._num_cached -= len(leaf.key)
        leaf.parent, leaf.is_detached, leaf.slots = None, True, _EMPTY_SLOTS
        return len(leaf.key)

    def _drop_empty_roots(self) -> None:
        for tenant in [t for t, root in self._roots.items() if not root.children]:
            del self._roots[tenant]

    def _iter_nodes(self) -> Iterator[RadixNode]:
        """Every non-root node of every tenant's tree (depth first)."""
        stack = list(self._roots.values())
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            if not node.is_root:
                yield node


def _is_evictable_leaf(node: RadixNode) -> bool:
    return not node.is_root and not node.children and node.lock_ref == 0


def _as_token_list(token_ids: Sequence[int]) -> list[int]:
    # Tensors and arrays become plain ints: 0-dim tensors would hash by identity in the child dicts.
    return token_ids.tolist() if hasattr(token_ids, "tolist") else list(token_ids)


def _common_len(key: list[int], tokens: list[int], pos: int) -> int:
    """Length of the common prefix of `key` and `tokens[pos:]`."""
    n = min(len(key), len(tokens) - pos)
    if key[:n] == tokens[pos : pos + n]:
        return n  # the common case, compared in C
    i = 0
    while key[i] == tokens[pos + i]:
        i += 1
    return i
