"""The house OCR model as the engine serves it (built-in name `house-ocr`, the
weights shipped in models/house-ocr/): greedy tokens identical to the plain
PyTorch reference forward of the same weights (training/house_ocr/model.py,
full recompute, no KV cache), batched and alone, with chunked prefill cutting
through the image and with a prefix-cache hit; the CTC draft head identical to
the reference's; the shipped weights read clean printed lines; and with CTC
rescoring on (the default), the engine keeps the same reading per line as the
reference's `decode`, on hard lines where the decoder and the draft disagree."""
from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from engine.config import EngineConfig
from engine.engine import Engine
from engine.loader import resolve_model
from engine.models.line_encoder import LineEncoder
from engine.sampling_params import SamplingParams
from training.house_ocr import charset
from training.house_ocr.export import load_exported
from training.house_ocr.train import edit_distance

pytestmark = pytest.mark.slow

DEJAVU = "/usr/share/fonts/truetype/dejavu/"
LINES = [
    ("Invoice No. 2024-117", "DejaVuSans.ttf", 26),
    ("Total due: $1,284.50 (net 30 days)", "DejaVuSerif.ttf", 22),
    ("The quick brown fox jumps over the lazy dog.", "DejaVuSansMono.ttf", 18),
    ("Phone: +1 (555) 010-7788", "DejaVuSans-Bold.ttf", 30),
    ("Grand total", "DejaVuSerif.ttf", 40),
    ("42", "DejaVuSans.ttf", 24),
    ("Shipping address: 14 Elm Street, Springfield", "DejaVuSans.ttf", 16),
    ("e-mail: accounts@example.org", "DejaVuSerif.ttf", 20),
]
MAX_TOKENS = 64


def render(text: str, font_file: str, size: int) -> Image.Image:
    font = ImageFont.truetype(DEJAVU + font_file, size)
    left, top, right, bottom = font.getbbox(text)
    pad = max(4, size // 3)
    image = Image.new("RGB", (right - left + 2 * pad, bottom - top + 2 * pad), "white")
    ImageDraw.Draw(image).text((pad - left, pad - top), text, font=font, fill="black")
    return image


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def crops() -> list[Image.Image]:
    return [render(*line) for line in LINES]


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(0)
    return load_exported(resolve_model("house-ocr"))


@pytest.fixture(scope="module")
def reference_outputs(reference, crops) -> list[list[int]]:
    encoder = LineEncoder(1)
    return [reference.greedy(torch.from_numpy(encoder.encode(np.asarray(crop))), MAX_TOKENS) for crop in crops]


@pytest.fixture(scope="module")
def engine():
    return Engine(EngineConfig(model="house-ocr", ctc_rescoring=False, kv_tokens=8192, debug=True))


def prompt(engine: Engine) -> str:
    return engine.tokenizer.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Text Recognition:"}]}],
        add_generation_prompt=True, tokenize=False)


def model_draft(req) -> list[int] | None:
    """The model's own draft of the request's output (engine/spec/state.py), or None."""
    return req.draft.model_ids if req.draft is not None else None


def rescored(req) -> bool:
    """Whether the model may replace the request's finished output with its draft."""
    return req.draft is not None and req.draft.rescore


def greedy() -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS)


def test_chat_template_gives_the_trained_prompt(engine):
    ids = engine.tokenizer(prompt(engine), add_special_tokens=False).input_ids
    assert ids == [charset.BOS_ID, charset.IMAGE_START_ID, charset.IMAGE_ID, charset.IMAGE_END_ID,
                   charset.TASK_TEXT_ID]


def test_batched_greedy_equals_the_reference_forward(engine, crops, reference_outputs):
    outs = engine.generate([prompt(engine)] * len(crops), greedy(), images=[[png(c)] for c in crops])
    for out, expected in zip(outs, reference_outputs):
        assert out.token_ids == expected
        assert out.text == charset.decode(expected)


def test_alone_and_with_chunked_prefill_equals_the_reference(crops, reference_outputs):
    engine = Engine(EngineConfig(model="house-ocr", ctc_rescoring=False, kv_tokens=4096, max_prefill_tokens=7,
                                 debug=True))
    for crop, expected in zip(crops[:3], reference_outputs[:3]):
        out = engine.generate([prompt(engine)], greedy(), images=[[png(crop)]])[0]
        assert out.token_ids == expected


def test_the_same_crop_again_hits_the_prefix_cache(engine, crops, reference_outputs):
    first = engine.generate([prompt(engine)], greedy(), images=[[png(crops[1])]])[0]
    again = engine.generate([prompt(engine)], greedy(), images=[[png(crops[1])]])[0]
    assert again.num_cached_tokens >= again.num_prompt_tokens - 1
    assert first.token_ids == again.token_ids == reference_outputs[1]


def test_ctc_draft_equals_the_reference_head(engine, reference, crops):
    model = engine.runner.model
    encoder = LineEncoder(1)
    for crop in crops:
        features, grid = engine.multimodal.preprocessor.preprocess(crop, "image 1")
        assert torch.equal(features, torch.from_numpy(encoder.encode(np.asarray(crop))))
        assert grid == (1, 1, -(-features.shape[0] // 2))
        assert model.ctc_draft(features) == reference.ctc_greedy(features)


def test_shipped_weights_read_clean_print(engine, crops):
    outs = engine.generate([prompt(engine)] * len(crops), greedy(), images=[[png(c)] for c in crops])
    errors = sum(edit_distance(out.text, text) for out, (text, _, _) in zip(outs, LINES))
    total = sum(len(text) for text, _, _ in LINES)
    assert errors / total < 0.03, [out.text for out in outs]


def test_frame_count_formula_matches_the_network():
    from engine.models.line_encoder import frames_for_width

    encoder = LineEncoder(1)
    for width in list(range(16, 140)) + [263, 264, 265, 999, 1000, 3200]:
        assert encoder.run(np.zeros((1, 3, 48, width), np.float32)).shape[0] == frames_for_width(width)


def test_speculative_decoding_with_the_ctc_draft_gives_the_same_tokens_in_fewer_steps(crops, reference_outputs):
    runs = {}
    for k in (0, 32):
        engine = Engine(EngineConfig(model="house-ocr", ctc_rescoring=False, kv_tokens=8192, debug=True,
                                     speculative_tokens=k))
        outs = engine.generate([prompt(engine)] * len(crops), greedy(), images=[[png(c)] for c in crops])
        runs[k] = (engine, [o.token_ids for o in outs])
    (plain, plain_ids), (spec, spec_ids) = runs[0], runs[32]
    assert spec_ids == plain_ids == reference_outputs
    assert plain.num_draft_tokens == 0 and spec.num_accepted_draft_tokens > 0
    assert spec.num_steps < plain.num_steps


def test_a_right_draft_is_verified_with_the_prompt_in_one_step(crops, reference_outputs):
    """The step that runs a prompt's last tokens verifies the draft of the output too: a line
    whose CTC draft is right takes one forward pass, whole or after a cached prefix."""
    engine = Engine(EngineConfig(model="house-ocr", ctc_rescoring=False, kv_tokens=8192, debug=True,
                                 speculative_tokens=64))
    right = 0
    for attempt in ("first", "cached"):
        for crop, expected in zip(crops, reference_outputs):
            req = engine.add_request(prompt(engine), greedy(), images=[png(crop)])
            draft_is_right = req.draft.model_ids == expected
            steps = 0
            while engine.has_work:
                engine.step()
                steps += 1
            assert req.output_ids == expected, attempt
            if draft_is_right:
                right += 1
                assert steps == 1 and req.draft.num_accepted == len(expected), attempt
            if attempt == "cached":
                assert req.num_cached_tokens > 0
    assert right >= 4


def test_wrong_drafts_change_nothing_and_their_kv_is_given_back(crops, reference_outputs):
    engine = Engine(EngineConfig(model="house-ocr", ctc_rescoring=False, kv_tokens=8192, debug=True))
    free_before = engine.pool.num_free
    requests = []
    for i, crop in enumerate(crops[:4]):
        req = engine.make_request(prompt(engine), greedy(), images=[png(crop)])
        good = req.draft.model_ids
        assert good is not None and good[-1] == charset.EOS_ID
        # garbage, the right reading shifted by one, a draft that ends too early, none at all
        req.draft.model_ids = [[charset.TOKEN_ID["x"]] * 40, good[1:], good[:3] + [charset.EOS_ID], []][i]
        requests.append(engine.add_request(req, greedy()))
    while engine.has_work:
        engine.step()
    for req, expected in zip(requests, reference_outputs[:4]):
        assert req.output_ids == expected
    assert engine.pool.num_free + engine.cache.num_cached_tokens == free_before


def test_only_plain_greedy_requests_get_a_draft(engine, crops):
    image = [png(crops[0])]
    assert model_draft(engine.make_request(prompt(engine), greedy(), images=image))
    for logprobs in (0, 3):   # logprobs are computed for verified tokens too (test_house_ocr_logprobs.py)
        params = SamplingParams(temperature=0, max_tokens=8, logprobs=logprobs)
        assert model_draft(engine.make_request(prompt(engine), params, images=image))
    for params in (SamplingParams(temperature=0.7, max_tokens=8), SamplingParams(temperature=0, max_tokens=8,
                   repetition_penalty=1.2)):
        assert model_draft(engine.make_request(prompt(engine), params, images=image)) is None


def test_speculative_decoding_under_retraction_matches_the_reference(crops, reference_outputs):
    # Short drafts: with 32 drafted tokens (most of a line) verified with the prompt, the lines
    # finish before the pool runs dry and nothing is retracted.
    engine = Engine(EngineConfig(model="house-ocr", ctc_rescoring=False, kv_tokens=260, context_length=256, debug=True,
                                 speculative_tokens=4))
    outs = engine.generate([prompt(engine)] * len(crops), greedy(), images=[[png(c)] for c in crops])
    assert [o.token_ids for o in outs] == reference_outputs
    assert engine.scheduler.num_retractions > 0 and engine.num_accepted_draft_tokens > 0


def test_bad_crops_get_clear_errors_and_odd_ones_still_read(engine, crops, reference_outputs):
    from engine.errors import InvalidRequestError

    for data, what in ((b"not an image", "image"), (png(Image.new("RGB", (3, 40), "white")), "4")):
        with pytest.raises(InvalidRequestError, match=what):
            engine.make_request(prompt(engine), greedy(), images=[data])
    with pytest.raises(InvalidRequestError, match="placeholder"):   # the template's one image, but two given
        engine.make_request(prompt(engine), greedy(), images=[png(crops[0]), png(crops[1])])
    # the smallest accepted crop, and a strip at the widest aspect ratio allowed (squeezed to 3,200 px)
    odd = [Image.new("RGB", (4, 4), "white"), render("x" * 400, "DejaVuSans.ttf", 12).resize((4000, 20))]
    outs = engine.generate([prompt(engine)] * 3, greedy(), images=[[png(odd[0])], [png(odd[1])], [png(crops[0])]])
    assert all(o.finish_reason in ("stop", "length") for o in outs)
    assert outs[2].token_ids == reference_outputs[0]   # the engine keeps reading normal crops


def test_the_chat_template_refuses_a_message_without_exactly_one_image(engine):
    import jinja2

    for content in ("just text", [{"type": "image"}, {"type": "image"}]):
        with pytest.raises(jinja2.TemplateError, match="exactly one image"):
            engine.tokenizer.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                                 tokenize=False)


def test_the_fused_encoder_graph_gives_the_original_features(crops):
    """The encoder session runs the recogniser with its hard-swish activations rewritten and its
    scalar scale-and-shift pairs folded into the convolutions; the features must be the original
    graph's up to float rounding."""
    import onnxruntime

    from engine.models.line_encoder import model_path, preprocess, truncated_graph

    data = model_path().read_bytes()
    fused, original = truncated_graph(data, fuse=True), truncated_graph(data, fuse=False)
    assert sum(n.op_type == "HardSigmoid" for n in fused.graph.node) >= 28
    assert not any(n.op_type == "Clip" for n in fused.graph.node)
    count = lambda graph, op: sum(n.op_type == op for n in graph.node)  # noqa: E731
    assert count(fused.graph, "Conv") == count(original.graph, "Conv")
    # 53 scale-and-shift pairs folded: each removes its Mul, and its Add unless the conv after it pads.
    assert count(original.graph, "Mul") - count(fused.graph, "Mul") == 53
    assert count(original.graph, "Add") - count(fused.graph, "Add") == 28 + 40   # hard-swish's Add 3, and folds
    # Nothing after the features is left to run (the recogniser's own classifier was ~5% of the time).
    for graph in (fused.graph, original.graph):
        read = {name for node in graph.node for name in node.input} | {out.name for out in graph.output}
        assert all(name in read for node in graph.node for name in node.output)
    uncut = truncated_graph(data, fuse=False, drop_unread=False)
    assert count(uncut.graph, "MatMul") - count(original.graph, "MatMul") == 1
    plain = onnxruntime.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"])
    encoder = LineEncoder(1)
    for crop in crops:
        pixels = preprocess(np.asarray(crop))
        expected = plain.run(None, {"x": pixels})[0][0]
        np.testing.assert_allclose(encoder.run(pixels), expected, rtol=0, atol=1e-4 * np.abs(expected).max())


# Long lines at 9-11 px, slightly blurred: hard enough that the decoder's greedy reading and the
# CTC draft disagree on some of them (the test checks that it happens).
HARD_LINES = [("THE ENTIRE RISK AS TO THE QUALITY AND PERFORMANCE OF THE PROGRAM IS WITH YOU. SHOULD THE "
               "PROGRAM PROVE", font, size) for font, size in (("DejaVuSans.ttf", 10), ("DejaVuSansMono.ttf", 10),
                                                                ("DejaVuSerif.ttf", 9), ("DejaVuSerif.ttf", 10),
                                                                ("DejaVuSansMono.ttf", 8))]
HARD_LINES.append(("Source Code Form that contains any Covered Software. Public License, restricting the Ancillary "
                   "property", "DejaVuSerif.ttf", 9))


def test_ctc_rescoring_keeps_the_reference_reading_where_decoder_and_draft_disagree(reference):
    crops = [render(*line).filter(ImageFilter.GaussianBlur(0.6)) for line in HARD_LINES]
    encoder = LineEncoder(1)
    features = [torch.from_numpy(encoder.encode(np.asarray(crop))) for crop in crops]
    greedy_ids = [reference.greedy(f, 256) for f in features]
    drafts = [reference.ctc_greedy(f) + [charset.EOS_ID] for f in features]
    disagree = [i for i, (g, d) in enumerate(zip(greedy_ids, drafts)) if g != d]
    assert disagree, "no hard line where the decoder and the draft disagree: the test checks nothing"
    expected = [reference.decode(f, 256) for f in features]
    assert any(expected[i] == drafts[i] for i in disagree), "the draft never won: the test checks nothing"

    engine = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, debug=True))
    model, scored = engine.runner.model, {}
    original = model.rescore

    def recording(*args):
        # keyed by output and draft: two crops may share a draft (DejaVuSerif at 9 and 10 px do)
        scored[tuple(args[2]), tuple(args[4])] = original(*args)
        return scored[tuple(args[2]), tuple(args[4])]

    model.rescore = recording
    text = prompt(engine)
    outputs = engine.generate([text] * len(crops), SamplingParams(temperature=0.0, max_tokens=256),
                              images=[[png(crop)] for crop in crops])
    assert [o.token_ids for o in outputs] == expected
    assert [o.text for o in outputs] == [charset.decode(ids) for ids in expected]
    assert all(o.finish_reason == "stop" and o.num_output_tokens == len(ids) for o, ids in zip(outputs, expected))
    assert engine.num_rescored == len(disagree) == len(scored)
    engine.pool.check_invariants()
    # The engine scores only what follows the two readings' common start (the output's from its
    # tokens' log-probs as decoded, the draft's over the pool's K/V of the rest); the difference
    # between the two scores is the reference's, over whole sequences.
    for i in disagree:
        result = scored[tuple(greedy_ids[i]), tuple(drafts[i])]
        mine, theirs = result.output, result.draft
        ref_mine, ref_theirs = reference.sequence_scores(features[i], [greedy_ids[i], drafts[i]])
        assert mine - theirs == pytest.approx(ref_mine - ref_theirs, abs=1e-3)

    # switched off, the output is plain greedy
    plain = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, debug=True, ctc_rescoring=False))
    outputs = plain.generate([text] * len(crops), SamplingParams(temperature=0.0, max_tokens=256),
                             images=[[png(crop)] for crop in crops])
    assert [o.token_ids for o in outputs] == greedy_ids


def test_a_rescored_request_hands_back_nothing_until_it_finishes():
    rescoring = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, debug=True))
    crop = render("Grand total due: $1,284.50", "DejaVuSerif.ttf", 22)
    req = rescoring.add_request(prompt(rescoring), greedy(), images=[png(crop)])
    assert rescored(req)
    seen = []
    while rescoring.has_work:
        seen += [o for o in rescoring.step() if o.request_id == req.request_id]
    assert len(seen) == 1 and seen[0].finished and seen[0].delta_text == seen[0].text
    # stop conditions of the request's own, or sampling, keep the output streaming and unrescored
    for params in (SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, stop=["$"]),
                   SamplingParams(temperature=0.7, max_tokens=MAX_TOKENS)):
        assert not rescored(rescoring.make_request(prompt(rescoring), params, images=[png(crop)]))


def test_ctc_rescoring_under_retraction_matches_the_reference(reference):
    """Lines retracted under KV pressure and run again are rescored over the K/V they hold when
    they finish, and still give the reference's reading."""
    crops = [render(*line).filter(ImageFilter.GaussianBlur(0.6)) for line in HARD_LINES]
    encoder = LineEncoder(1)
    expected = [reference.decode(torch.from_numpy(encoder.encode(np.asarray(crop))), 256) for crop in crops]
    engine = Engine(EngineConfig(model="house-ocr", kv_tokens=420, context_length=400, debug=True,
                                 speculative_tokens=4))
    outputs = engine.generate([prompt(engine)] * len(crops), SamplingParams(temperature=0.0, max_tokens=256),
                              images=[[png(crop)] for crop in crops])
    assert [o.token_ids for o in outputs] == expected
    assert engine.scheduler.num_retractions > 0 and engine.num_rescored > 0
    engine.pool.check_invariants()


@pytest.mark.parametrize("weight", ["0.3", 1.0, -0.1, None, True, float("nan")])
def test_a_bad_ctc_weight_in_the_checkpoint_is_refused_by_name(tmp_path, weight):
    import json
    import shutil

    folder = tmp_path / "house-ocr"
    shutil.copytree(resolve_model("house-ocr"), folder)
    config = json.loads((folder / "config.json").read_text())
    config["house_ocr"]["ctc_weight"] = weight
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="house_ocr.ctc_weight"):
        Engine(EngineConfig(model=str(folder), kv_tokens=1024))
