"""Speculative-decoding flags in our, SGLang's and vLLM's spellings, through the real parser and
config builder of `ocrserve engine` (engine/server/cli_args.py, engine/spec/flags.py): what each
spelling sets in `EngineConfig`, and the message when a combination is refused."""
from __future__ import annotations

import json

import pytest

from engine.server.cli_args import build_parser, engine_config_from_args

SPEC_FIELDS = ("speculative_algorithm", "draft_tokens", "ngram_min", "ngram_max", "draft_model")


def spec_config(*flags: str) -> dict:
    config = engine_config_from_args(build_parser().parse_args(["--model", "smollm2-135m", *flags]))
    return {field: getattr(config, field) for field in SPEC_FIELDS}


def refusal(*flags: str) -> str:
    with pytest.raises(ValueError) as info:
        spec_config(*flags)
    return str(info.value)


def vllm(**config) -> tuple[str, str]:
    return "--speculative-config", json.dumps(config)


DEFAULT = {"speculative_algorithm": "auto", "draft_tokens": 4, "ngram_min": 2, "ngram_max": 4, "draft_model": None}
NGRAM_5 = {**DEFAULT, "speculative_algorithm": "ngram", "draft_tokens": 5}


def test_without_flags_only_a_models_own_drafts():
    assert spec_config() == DEFAULT
    assert spec_config("--speculative-algorithm", "none")["speculative_algorithm"] == "none"


def test_our_flags():
    assert spec_config("--speculative-algorithm", "ngram", "--speculative-num-draft-tokens", "5") == NGRAM_5
    assert spec_config("--speculative-algorithm", "ngram", "--speculative-ngram-min", "1",
                       "--speculative-ngram-max", "6") == {**DEFAULT, "speculative_algorithm": "ngram",
                                                          "ngram_min": 1, "ngram_max": 6}
    assert spec_config("--speculative-algorithm", "draft_model", "--speculative-draft-model-path", "/m/draft") == \
        {**DEFAULT, "speculative_algorithm": "draft_model", "draft_model": "/m/draft"}


def test_sglang_spelling_drafts_a_chain_of_num_steps_tokens():
    # SGLang's own launch line for a chain: num_draft_tokens = num_steps + 1 (it counts the root)
    assert spec_config("--speculative-algorithm", "NGRAM", "--speculative-num-steps", "5",
                       "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "6") == NGRAM_5
    assert spec_config("--speculative-algorithm", "NGRAM", "--speculative-num-steps", "5") == NGRAM_5
    assert spec_config("--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", "d") == \
        {**DEFAULT, "speculative_algorithm": "draft_model", "draft_model": "d"}


def test_sglang_contradictions_and_trees_are_refused():
    message = refusal("--speculative-algorithm", "ngram", "--speculative-num-steps", "5",
                      "--speculative-num-draft-tokens", "5")
    assert "--speculative-num-draft-tokens 5 contradicts it: give 6" in message
    message = refusal("--speculative-algorithm", "ngram", "--speculative-eagle-topk", "4")
    assert "--speculative-eagle-topk 4 is not supported" in message and "single chain" in message
    for name in ("EAGLE", "EAGLE3"):
        message = refusal("--speculative-algorithm", name)
        assert f"{name.lower()!r} is not supported" in message and "supported: ngram" in message


def test_mtp_spellings_of_both_projects():
    # GLM-OCR's recommended SGLang launch: NEXTN, 3 steps, top-k 1, 4 draft tokens (3 + the root)
    mtp_3 = {**DEFAULT, "speculative_algorithm": "mtp", "draft_tokens": 3}
    assert spec_config("--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
                       "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4") == mtp_3
    # vLLM's: method mtp (or a model-named alias), num_speculative_tokens
    assert spec_config(*vllm(method="mtp", num_speculative_tokens=1)) == {**mtp_3, "draft_tokens": 1}
    assert spec_config(*vllm(method="deepseek_mtp", num_speculative_tokens=3)) == mtp_3
    assert "applies to ngram drafts" in refusal("--speculative-algorithm", "mtp", "--speculative-ngram-min", "2")


def test_vllm_spelling():
    assert spec_config(*vllm(method="ngram", num_speculative_tokens=5)) == NGRAM_5
    assert spec_config(*vllm(method="ngram", num_speculative_tokens=5, prompt_lookup_min=3,
                             prompt_lookup_max=5)) == {**NGRAM_5, "ngram_min": 3, "ngram_max": 5}
    # one lookup size given: the other keeps its default where it can, else meets it
    assert spec_config(*vllm(method="ngram", prompt_lookup_max=3))["ngram_min"] == 2
    assert spec_config(*vllm(method="ngram", prompt_lookup_min=6))["ngram_max"] == 6
    draft = {**DEFAULT, "speculative_algorithm": "draft_model", "draft_tokens": 3, "draft_model": "/m/d"}
    assert spec_config(*vllm(model="/m/d", num_speculative_tokens=3)) == draft           # a model: a draft model
    assert spec_config(*vllm(method="draft_model", model="/m/d", num_speculative_tokens=3)) == draft


@pytest.mark.parametrize("config, expected", [
    ({"method": "eagle", "model": "e"}, "method 'eagle' is not supported by this engine; supported: ngram"),
    ({"method": "medusa", "model": "m"}, "method 'medusa' is not supported"),
    ({"method": "ngram", "draft_tensor_parallel_size": 1}, "unknown key(s) draft_tensor_parallel_size"),
    ({"method": "ngram", "num_speculative_tokens": 0}, "num_speculative_tokens must be a positive integer"),
    ({"method": "ngram", "num_speculative_tokens": True}, "num_speculative_tokens must be a positive integer"),
    ({"num_speculative_tokens": 3}, "names neither a method nor a draft model"),
    ({"method": "draft_model"}, "needs the draft model"),
    ({"method": "ngram", "model": "m"}, "applies to draft_model drafts"),
    ({"model": "m", "prompt_lookup_max": 3}, "applies to ngram drafts"),
])
def test_vllm_methods_and_keys_we_do_not_have_are_refused(config, expected):
    assert expected in refusal(*vllm(**config))


def test_malformed_vllm_json_is_an_argument_error(capsys):
    for value in ("{method: ngram}", '["ngram"]'):
        with pytest.raises(SystemExit) as info:
            build_parser().parse_args(["--model", "m", "--speculative-config", value])
        assert info.value.code == 2
        assert "argument --speculative-config" in capsys.readouterr().err


def test_both_spellings_only_when_they_agree():
    assert spec_config(*vllm(method="ngram", num_speculative_tokens=5), "--speculative-algorithm", "NGRAM",
                       "--speculative-num-draft-tokens", "5") == NGRAM_5
    assert spec_config(*vllm(method="ngram", num_speculative_tokens=5), "--speculative-num-steps", "5",
                       "--speculative-eagle-topk", "1") == NGRAM_5
    message = refusal(*vllm(method="ngram", num_speculative_tokens=5), "--speculative-num-draft-tokens", "6")
    assert "num_speculative_tokens=5" in message and "says 6" in message and "make them agree" in message
    message = refusal(*vllm(method="ngram"), "--speculative-algorithm", "draft_model",
                      "--speculative-draft-model-path", "d")
    assert "method='ngram'" in message and "'draft_model'" in message
    assert "model='a'" in refusal(*vllm(model="a"), "--speculative-algorithm", "draft_model",
                                  "--speculative-draft-model-path", "b")


def test_a_setting_the_method_would_ignore_is_refused():
    assert "would be ignored with speculative algorithm 'auto'" in refusal("--speculative-num-steps", "3")
    assert "would be ignored" in refusal("--speculative-num-draft-tokens", "3")
    assert "applies to ngram drafts" in refusal("--speculative-algorithm", "draft_model",
                                                "--speculative-draft-model-path", "d",
                                                "--speculative-ngram-max", "3")
    assert "applies to draft_model drafts" in refusal("--speculative-draft-model-path", "d")
    assert "needs the draft model" in refusal("--speculative-algorithm", "draft_model")
    # n-gram sizes that cannot both hold: EngineConfig's own check
    assert "1 <= ngram_min <= ngram_max" in refusal("--speculative-algorithm", "ngram", "--speculative-ngram-min",
                                                    "5", "--speculative-ngram-max", "3")


def test_help_documents_the_chain_rule():
    text = build_parser().format_help()
    assert "--speculative-config" in text and "--speculative-num-steps" in text
    assert "N + 1" in " ".join(text.split())
