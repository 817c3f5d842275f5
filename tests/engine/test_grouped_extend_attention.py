"""Short extends (verified drafts) attended in one padded call equal one call per request."""
from __future__ import annotations

import pytest
import torch

from engine.forward_batch import GROUP_BUDGET, SHORT_EXTEND_MAX, ExtendGroup, ForwardBatch
from kernels.paged_attention import extend_attention, grouped_extend_attention


@pytest.mark.parametrize("num_heads, num_kv_heads", [(4, 2), (4, 4), (9, 3)])
def test_grouped_equals_per_request(num_heads, num_kv_heads):
    torch.manual_seed(0)
    head_dim, num_slots = 16, 600
    k_cache = torch.randn(num_kv_heads, num_slots, head_dim)
    v_cache = torch.randn(num_kv_heads, num_slots, head_dim)
    # new tokens and total lengths per request: decodes, verifications, a long prefill, a whole-prompt prefill
    extend_lens = [1, 5, 33, 2, 120, 17, 1, 9]
    kv_lens = [40, 60, 33 + 90, 7, 150, 17, 12, 80]
    slots = torch.randperm(num_slots - 1) + 1
    kv_slots, used = [], 0
    for length in kv_lens:
        kv_slots.append(slots[used:used + length].clone())
        used += length
    batch = ForwardBatch.build([[0] * e for e in extend_lens], [k - e for k, e in zip(kv_lens, extend_lens)],
                               kv_slots, [True] * len(extend_lens))
    grouped_rows = sorted(r for g in batch.extend_groups for r in g.rows)
    assert grouped_rows == [i for i, e in enumerate(extend_lens) if 1 < e <= SHORT_EXTEND_MAX]
    q = torch.randn(sum(extend_lens), num_heads, head_dim)
    starts = [sum(extend_lens[:i]) for i in range(len(extend_lens))]
    for group in batch.extend_groups:
        out = grouped_extend_attention(q, k_cache, v_cache, group.token_index, group.slot_table, group.mask, 0.25)
        for j, i in enumerate(group.rows):
            s, e = starts[i], extend_lens[i]
            expected = extend_attention(q[s:s + e], k_cache, v_cache, kv_slots[i], 0.25)
            torch.testing.assert_close(out[j, :e], expected, rtol=1e-5, atol=1e-5)
            assert group.valid[j].sum() == e and torch.equal(group.token_index[j, :e], torch.arange(s, s + e))


def test_groups_stay_within_the_budget_and_one_short_extend_is_not_grouped():
    lens = [SHORT_EXTEND_MAX] * 40
    kv = [2000] * 40
    slots = [torch.arange(k) for k in kv]
    groups = ExtendGroup.build_all(lens, kv, slots)
    assert sorted(r for g in groups for r in g.rows) == list(range(40))
    assert all(len(g.rows) * SHORT_EXTEND_MAX * 2000 <= GROUP_BUDGET for g in groups)
    assert ExtendGroup.build_all([1, 5, 200], [10, 20, 300], [torch.arange(k) for k in (10, 20, 300)]) == []
