"""Real processes for the adversarial suite: the API (`ocrserve api`), the engine server on a tiny
random-weight Llama, started and stopped like the other suites start theirs."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workers"))

from service_harness import REPO_ROOT, free_port, service_env, wait_for  # noqa: E402

__all__ = ["REPO_ROOT", "free_port", "service_env", "wait_for", "ApiProcess", "build_tiny_llama"]


class ApiProcess:
    """`python -m app.cli api` on loopback with the given environment; its log in `log_path`."""

    def __init__(self, env: dict[str, str], log_path: Path, port: int | None = None):
        self.port = port or free_port()
        self.log_path = log_path
        self._log = open(log_path, "ab")   # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "api", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, cwd=REPO_ROOT, stdout=self._log, stderr=self._log, start_new_session=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def healthy(self) -> bool:
        assert self.process.poll() is None, self.log_text()
        try:
            return httpx.get(f"{self.base_url}/health", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    def wait_ready(self, timeout_s: float = 120) -> ApiProcess:
        wait_for(self.healthy, timeout_s, what="the API")
        return self

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self._log.close()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        self._log.close()
        return self.process.returncode


def build_tiny_llama(path: Path, smollm2_path: Path, vocab_size: int = 1024) -> Path:
    """A 2-layer random-weight Llama with SmolLM2's tokenizer and chat template (ids under the vocab)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      eos_token_id=None, bos_token_id=None, pad_token_id=None, tie_word_embeddings=False)
    LlamaForCausalLM(cfg).eval().save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(smollm2_path / name, path / name)
    for name in ("chat_template.jinja",):
        if (smollm2_path / name).exists():
            shutil.copy(smollm2_path / name, path / name)
    return path


def engine_server_class():
    """`EngineServer` from the engine server suite's conftest (package `server` under tests/engine)."""
    engine_tests = str(Path(__file__).resolve().parents[1] / "engine")
    if engine_tests not in sys.path:
        sys.path.insert(0, engine_tests)
    from server.conftest import EngineServer

    return EngineServer
