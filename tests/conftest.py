"""Shared fixtures. Loading SmolLM2 and its Hugging Face reference is the
expensive part of the suite, so both are session-scoped."""
from __future__ import annotations

import os

import pytest
import torch

# Two cores on CI, shared with server subprocesses: oversubscribed OpenMP threads spin.
torch.set_num_threads(int(os.environ.get("OCRSERVE_TEST_THREADS", "1")))


@pytest.fixture(scope="session")
def postgres_server():
    """One throw-away PostgreSQL cluster for the session (tests/postgres_server.py)."""
    from postgres_server import PostgresServer

    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server):
    """An empty database of the test's own on the session's cluster."""
    return postgres_server.new_database()


@pytest.fixture(scope="session")
def smollm2_path():
    from engine.loader import resolve_model

    return resolve_model("smollm2-135m")


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(smollm2_path))


@pytest.fixture(scope="session")
def hf_smollm2(smollm2_path):
    """The reference implementation on the same weights."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(smollm2_path), dtype=torch.float32)
    model.eval()
    return model
