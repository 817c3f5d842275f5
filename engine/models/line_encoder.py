"""The house OCR model's frozen image encoder: the PP-OCRv4 text-line recogniser
shipped in `rapidocr-onnxruntime` (Apache-2.0), cut before its CTC classifier.

The network reads a line crop resized to 48 pixels high (width by aspect, up to
`MAX_WIDTH`), BGR, scaled to [-1, 1], and gives one 120-dimensional feature
vector per 8 pixels of width — the vectors its own CTC head classifies. The
house model projects pairs of them into its decoder as image tokens.

Training and serving both go through `LineEncoder.encode`, so the features a
model was trained on are the features it is served.
"""
from __future__ import annotations

import hashlib
import threading
from importlib import metadata
from pathlib import Path

import cv2
import numpy as np

HEIGHT = 48
MAX_WIDTH = 3200            # wider crops are squeezed to this width (400 frames)
MIN_WIDTH = 16
FEATURE_DIM = 120
FRAME_STRIDE = 8            # input pixels per output frame
_DISTRIBUTION = "rapidocr-onnxruntime"
_PATH_IN_WHEEL = "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"
_SHA256 = "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b"
_FEATURE_OUTPUT = "transpose_51.tmp_0"   # [batch, frames, 120], the CTC head's input


def model_path() -> Path:
    try:
        dist = metadata.distribution(_DISTRIBUTION)
    except metadata.PackageNotFoundError as exc:
        raise RuntimeError(f"{_DISTRIBUTION} is not installed; it ships the house OCR model's encoder") from exc
    path = Path(str(dist.locate_file(_PATH_IN_WHEEL)))
    if not path.is_file():
        raise RuntimeError(f"{path} is missing from the installed {_DISTRIBUTION}")
    return path


def frames_for_width(width: int) -> int:
    """Output frames for an input of this width: the network's strided convolutions give
    floor((W + 3) / 8) (checked against the network for every width in a test)."""
    return (width + 3) // FRAME_STRIDE


def input_width(crop_width: int, crop_height: int) -> int:
    """Width of the network input for a crop of this size."""
    width = int(round(HEIGHT * crop_width / max(1, crop_height)))
    return int(min(MAX_WIDTH, max(MIN_WIDTH, width)))


def preprocess(rgb: np.ndarray) -> np.ndarray:
    """RGB uint8 [h, w, 3] -> network input [1, 3, 48, W] float32."""
    assert rgb.ndim == 3 and rgb.shape[2] == 3 and rgb.dtype == np.uint8, (rgb.shape, rgb.dtype)
    height, width = rgb.shape[:2]
    target_w = input_width(width, height)
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    resized = cv2.resize(bgr, (target_w, HEIGHT), interpolation=cv2.INTER_AREA if height > HEIGHT
                         else cv2.INTER_LINEAR)
    normalised = (resized.astype(np.float32) / 127.5) - 1.0
    return normalised.transpose(2, 0, 1)[None]


class LineEncoder:
    """One onnxruntime session over the truncated recogniser; thread-safe `encode`."""

    _lock = threading.Lock()
    _sessions: dict[int, object] = {}

    def __init__(self, num_threads: int = 2):
        self.num_threads = num_threads
        with LineEncoder._lock:
            if num_threads not in LineEncoder._sessions:
                LineEncoder._sessions[num_threads] = _build_session(num_threads)
        self._session = LineEncoder._sessions[num_threads]

    def encode(self, rgb: np.ndarray) -> np.ndarray:
        """Features [frames, 120] float32 for one RGB line crop."""
        return self.run(preprocess(rgb))

    def run(self, pixels: np.ndarray) -> np.ndarray:
        """Features [frames, 120] float32 for one preprocessed input [1, 3, 48, W]."""
        assert pixels.ndim == 4 and pixels.shape[0] == 1 and pixels.shape[2] == HEIGHT, pixels.shape
        features = self._session.run([_FEATURE_OUTPUT], {"x": np.ascontiguousarray(pixels, dtype=np.float32)})[0]
        return np.ascontiguousarray(features[0], dtype=np.float32)


def _build_session(num_threads: int):
    import onnx
    import onnxruntime

    path = model_path()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != _SHA256:
        raise RuntimeError(f"{path} is not the PP-OCRv4 recogniser the house model was trained on "
                           f"(sha256 {digest[:12]}..., expected {_SHA256[:12]}...)")
    model = onnx.load_from_string(data)
    # Expose the features the CTC head reads, and drop the head's outputs.
    del model.graph.output[:]
    model.graph.output.append(onnx.helper.make_tensor_value_info(_FEATURE_OUTPUT, onnx.TensorProto.FLOAT, None))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = num_threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
