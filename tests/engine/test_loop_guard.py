"""The loop guard (engine/loop_guard.py) in the engine loop.

A tiny Llama whose weights make greedy decoding a fixed walk (token t is always followed by
succ(t): a lead-in, then a cycle) loops for sure: the guarded request stops with finish reason
"repetition" at exactly the token a brute-force reading of the rule names, with and without
n-gram speculative drafts (the drafter copies the cycle, so the stop falls inside an accepted
draft and the rest of it is dropped). A tiny random-weight Llama (as in
test_engine_parity.py) gives outputs that sometimes loop and sometimes do not: guarded, each is
its unguarded output token for token and logprob for logprob, cut where the rule says and
nowhere else. Limits are validated with errors naming the field; metrics count the stops.
"""
from __future__ import annotations

import random
import shutil

import pytest
import torch

from engine.config import EngineConfig
from engine.engine import Engine
from engine.errors import InvalidRequestError
from engine.loop_guard import LoopGuard, LoopGuardSpec
from engine.metrics import EngineMetrics
from engine.sampling_params import SamplingParams

VOCAB, HIDDEN = 64, 64
LEAD_IN = list(range(20, 30))      # 20 -> 21 -> ... -> 29 -> 30
CYCLE = [30, 31, 32]               # 30 -> 31 -> 32 -> 30: a loop of period 3
LONG_CYCLE = [40, 41, 42, 43, 44, 45, 46]   # from 40: a loop of period 7


def successor(token: int) -> int:
    for walk in (LEAD_IN + CYCLE[:1], CYCLE + CYCLE[:1], LONG_CYCLE + LONG_CYCLE[:1]):
        if token in walk[:-1]:
            return walk[walk.index(token) + 1]
    return 20 + token % 10     # anything else joins the lead-in


def first_loop(tokens: list[int], spec: LoopGuardSpec) -> int | None:
    """The guard's rule read naively: the length of the shortest prefix that ends in more than
    max_repeats whole copies of one unit of at most max_ngram_size tokens, over at least
    min_run_tokens tokens."""
    for end in range(1, len(tokens) + 1):
        for period in range(1, spec.max_ngram_size + 1):
            run = period
            while run < end and tokens[end - run - 1] == tokens[end - run - 1 + period]:
                run += 1
            if run >= max(spec.min_run_tokens, (spec.max_repeats + 1) * period):
                return end
    return None


@pytest.fixture(scope="module")
def walk_model(tmp_path_factory, smollm2_path):
    """A Llama with no attention or MLP output: logits = lm_head(norm(embed(t))), one-hot, so
    greedy decoding follows successor() exactly."""
    from transformers import LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("walk-llama")
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                      eos_token_id=None, bos_token_id=None, pad_token_id=None, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.eye(VOCAB, HIDDEN))
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        head = torch.zeros(VOCAB, HIDDEN)
        for token in range(VOCAB):
            head[successor(token), token] = 8.0
        model.lm_head.weight.copy_(head)
    model.save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(smollm2_path / name, path / name)
    return path


@pytest.fixture(scope="module")
def engines(walk_model):
    common = dict(model=str(walk_model), context_length=1024, kv_tokens=4096, debug=True)
    plain = Engine(EngineConfig(**common, speculative_algorithm="none"), metrics=EngineMetrics("walk"))
    drafted = Engine(EngineConfig(**common, speculative_algorithm="ngram", draft_tokens=6))
    yield plain, drafted
    plain.close()
    drafted.close()


def run_all(engine: Engine, prompts: list[list[int]], params: list[SamplingParams]) -> list[dict]:
    """Each request's streamed tokens, logprobs and finish reason, all run together."""
    reqs = [engine.add_request(p, sp) for p, sp in zip(prompts, params)]
    got = {r.request_id: {"tokens": [], "logprobs": [], "finish": None, "text": "", "deltas": []} for r in reqs}
    while engine.has_work:
        for out in engine.step():
            g = got[out.request_id]
            g["tokens"] += out.delta_token_ids
            g["logprobs"] += out.delta_logprobs
            g["deltas"].append(len(out.delta_token_ids))
            if out.finished:
                g["finish"], g["text"] = out.finish_reason, out.text
    return [got[r.request_id] for r in reqs]


def greedy(max_tokens: int, guard: LoopGuardSpec | None = None, **kw) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True, loop_guard=guard, **kw)


def test_a_forced_loop_stops_at_the_token_the_rule_names(engines):
    plain, _ = engines
    spec = LoopGuardSpec(max_repeats=2, min_run_tokens=24, max_ngram_size=16)
    free, guarded = run_all(plain, [[5, 20]] * 2, [greedy(120, logprobs=2), greedy(120, spec, logprobs=2)])
    assert free["finish"] == "length" and free["tokens"][:14] == LEAD_IN[1:] + CYCLE + [30, 31]
    stop = first_loop(free["tokens"], spec)
    assert stop == len(LEAD_IN) - 1 + 24        # the cycle starts after the lead-in; 24 tokens of it
    assert guarded["finish"] == "repetition"
    assert guarded["tokens"] == free["tokens"][:stop]
    assert guarded["logprobs"] == free["logprobs"][:stop]
    assert guarded["text"] == plain.detok_tokenizer.decode(free["tokens"][:stop])


def test_a_long_unit_needs_max_repeats_whole_copies(engines):
    plain, _ = engines
    spec = LoopGuardSpec(max_repeats=3, min_run_tokens=8, max_ngram_size=16)
    out = plain.generate([[5, 40]], greedy(100, spec))[0]
    # period 7: four whole copies (28 tokens) outweigh the 8-token floor
    assert out.finish_reason == "repetition" and len(out.token_ids) == 28 == first_loop(out.token_ids, spec)
    short_units = LoopGuardSpec(max_repeats=3, min_run_tokens=8, max_ngram_size=6)
    out = plain.generate([[5, 40]], greedy(100, short_units))[0]
    assert out.finish_reason == "length", "a unit longer than max_ngram_size is not looked for"


def test_speculative_drafts_are_cut_at_the_same_token(engines):
    plain, drafted = engines
    spec = LoopGuardSpec(max_repeats=2, min_run_tokens=40, max_ngram_size=8)
    want = run_all(plain, [[7, 21]], [greedy(200, spec, logprobs=1)])[0]
    accepted_before = drafted.num_accepted_draft_tokens
    got = run_all(drafted, [[7, 21]], [greedy(200, spec, logprobs=1)])[0]
    assert got["finish"] == want["finish"] == "repetition"
    assert got["tokens"] == want["tokens"] and len(got["tokens"]) == first_loop(got["tokens"], spec) == 48
    for g, w in zip(got["logprobs"], want["logprobs"], strict=True):
        assert g.token_id == w.token_id and g.logprob == pytest.approx(w.logprob, abs=1e-5)
    assert drafted.num_accepted_draft_tokens - accepted_before > 20, "the cycle was drafted and kept"
    assert got["deltas"][-1] > 1, "the stop fell inside a step that kept drafted tokens"
    drafted.pool.check_invariants()
    drafted.cache.check_invariants()


def test_random_weights_guarded_outputs_are_the_unguarded_ones_cut_by_the_rule(tmp_path, smollm2_path):
    """Nothing is changed where nothing loops: token ids and logprobs equal, guarded outputs cut
    exactly where the rule says and nowhere else."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      eos_token_id=None, bos_token_id=None, pad_token_id=None, tie_word_embeddings=False)
    LlamaForCausalLM(cfg).eval().save_pretrained(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(smollm2_path / name, tmp_path / name)
    # no prefix cache: a prompt's second run would start from its cached K/V, which alone moves a
    # logprob by an ulp; the runs compared must differ only in the guard
    engine = Engine(EngineConfig(model=str(tmp_path), kv_tokens=4096, enable_prefix_cache=False, debug=True))
    rng = random.Random(3)
    prompts = [[rng.randrange(3, 256) for _ in range(rng.randrange(3, 30))] for _ in range(12)]
    spec = LoopGuardSpec(max_repeats=2, min_run_tokens=12, max_ngram_size=12)
    free = [run_all(engine, [p], [greedy(80, logprobs=3)])[0] for p in prompts]
    guarded = [run_all(engine, [p], [greedy(80, spec, logprobs=3)])[0] for p in prompts]
    num_stopped = 0
    for f, g in zip(free, guarded):
        stop = first_loop(f["tokens"], spec)
        num_stopped += stop is not None
        assert g["tokens"] == f["tokens"][:stop] and g["logprobs"] == f["logprobs"][:stop]   # exactly
        assert g["finish"] == ("length" if stop is None else "repetition")
    # batched, a guarded request that stops early changes the batch the others run in (float sums
    # in another order: logprobs within 1e-5), never their tokens
    batched = run_all(engine, prompts, [greedy(80, spec, logprobs=3)] * len(prompts))
    for b, g in zip(batched, guarded):
        assert b["tokens"] == g["tokens"] and b["finish"] == g["finish"]
        assert [lp.logprob for lp in b["logprobs"]] == pytest.approx([lp.logprob for lp in g["logprobs"]], abs=1e-5)
    assert 0 < num_stopped < len(prompts), "the set holds outputs that loop and outputs that do not"


def test_the_metrics_count_guarded_requests_and_stops(engines):
    plain, _ = engines
    registry = plain.metrics.registry

    def value(name, **labels):
        return registry.get_sample_value(name, labels) or 0.0

    before = (value("ocrserve_loop_guard_requests_total"), value("ocrserve_loop_guard_stops_total"),
              value("ocrserve_request_success_total", finish_reason="repetition"))
    spec = LoopGuardSpec(max_repeats=2, min_run_tokens=16, max_ngram_size=8)
    plain.generate([[5, 20], [5, 1], [6, 20]], [greedy(60, spec), greedy(8, spec), greedy(40)])
    after = (value("ocrserve_loop_guard_requests_total"), value("ocrserve_loop_guard_stops_total"),
             value("ocrserve_request_success_total", finish_reason="repetition"))
    assert [a - b for a, b in zip(after, before)] == [2, 1, 1]


@pytest.mark.parametrize("option, message", [
    ({"max_repeats": 0}, "loop_guard.max_repeats must be between 1 and"),
    ({"min_run_tokens": 1}, "loop_guard.min_run_tokens must be >= 2"),
    ({"max_ngram_size": 5000}, "loop_guard.max_ngram_size must be between 1 and 1024"),
    ({"max_repeats": 2.5}, "loop_guard.max_repeats must be an integer"),
    ({"max_repeats": True}, "loop_guard.max_repeats must be an integer"),
    ({"ngram": 3}, "loop_guard has no field 'ngram'"),
    ("yes", "loop_guard must be true, false or an object"),
])
def test_bad_limits_are_refused_naming_the_field(option, message):
    with pytest.raises(InvalidRequestError) as refused:
        SamplingParams(loop_guard=option).validate()
    assert message in str(refused.value) and refused.value.param == "loop_guard"


def test_options_normalise_to_a_spec_or_none():
    assert SamplingParams().validate().loop_guard is None, "plain requests are unguarded"
    assert SamplingParams(loop_guard=False).validate().loop_guard is None
    assert SamplingParams(loop_guard=True).validate().loop_guard == LoopGuardSpec()
    assert SamplingParams(loop_guard={"min_run_tokens": 40}).validate().loop_guard == LoopGuardSpec(min_run_tokens=40)


def test_the_guard_matches_the_naive_rule_on_random_sequences():
    rng = random.Random(11)
    for _ in range(300):
        spec = LoopGuardSpec(rng.randint(1, 4), rng.randint(2, 20), rng.randint(1, 9))
        unit = [rng.randrange(4) for _ in range(rng.randint(1, 10))]
        tokens = [rng.randrange(4) for _ in range(rng.randint(0, 15))] + unit * rng.randint(1, 12)
        tokens += [rng.randrange(4) for _ in range(rng.randint(0, 5))]
        guard = LoopGuard(spec, 4)    # shorter than the output: it grows
        stop = next((i + 1 for i, token in enumerate(tokens) if guard.append(token)), None)
        assert stop == first_loop(tokens, spec), (spec, tokens)
