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
import os
import threading
from importlib import metadata
from pathlib import Path

import cv2
import numpy as np

HEIGHT = 48                 # the recogniser's training height; widths are set by the aspect ratio at it
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
    """Width of the network input for a crop of this size: its aspect ratio at 48 pixels high
    (also when `preprocess` is given fewer rows: the width sets the frame count)."""
    width = int(round(HEIGHT * crop_width / max(1, crop_height)))
    return int(min(MAX_WIDTH, max(MIN_WIDTH, width)))


def preprocess(rgb: np.ndarray, input_height: int = HEIGHT) -> np.ndarray:
    """RGB uint8 [h, w, 3] -> network input [1, 3, input_height, W] float32. The recogniser was
    trained at 48 pixels high and the house model reads it there; it also runs on fewer rows (its
    features pool them; same frames, proportionally cheaper), which bench/line_encoder.py measures
    and docs/BENCHMARKS.md explains why the model does not use."""
    assert rgb.ndim == 3 and rgb.shape[2] == 3 and rgb.dtype == np.uint8, (rgb.shape, rgb.dtype)
    height, width = rgb.shape[:2]
    target_w = input_width(width, height)
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    resized = cv2.resize(bgr, (target_w, input_height), interpolation=cv2.INTER_AREA if height > input_height
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


def truncated_graph(data: bytes, fuse: bool = True, drop_unread: bool = True):
    """The recogniser's ONNX graph ending at the features its CTC head reads (with `drop_unread`,
    the nodes after them removed, not only unlisted as outputs). With `fuse`, two
    rewrites that compute the same function with fewer passes over the activations (features
    within float rounding of the original, checked in a test):
    - hard-swish, exported as Add 3, Clip 0..6, Mul, Div 6 (four passes, which onnxruntime does
      not fuse), becomes x * HardSigmoid(x) with alpha 1/6, beta 1/2 (two passes);
    - the scalar scale-and-shift pairs PP-LCNetV3 puts before and after every activation (its
      "learnable affine blocks": 53 pairs, a quarter of the network's time) are folded into the
      convolutions next to them (`_fold_scalar_affines`). Together 1.45x faster than the exported
      graph on pipeline crops (bench/line_encoder.py)."""
    import onnx

    model = onnx.load_from_string(data)
    del model.graph.output[:]
    model.graph.output.append(onnx.helper.make_tensor_value_info(_FEATURE_OUTPUT, onnx.TensorProto.FLOAT, None))
    if drop_unread:
        _drop_unread(model.graph)
    if fuse:
        _fuse_hard_swish(model.graph)
        _fold_scalar_affines(model.graph)
    return model


def _drop_unread(graph) -> None:
    """Remove the nodes (and weights) no graph output depends on. onnxruntime runs a node whose
    output nobody reads: left in, the CTC classifier after the features (a 120 x 6625 MatMul, its
    bias and a softmax over every frame) were ~5% of the encoder's time, for nothing."""
    needed = {output.name for output in graph.output}
    kept = []
    for node in reversed(list(graph.node)):
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(node.input)
    kept.reverse()
    weights = [init for init in graph.initializer if init.name in needed]
    del graph.node[:]
    graph.node.extend(kept)
    del graph.initializer[:]
    graph.initializer.extend(weights)


def _fuse_hard_swish(graph) -> None:
    import onnx

    constants = {node.output[0]: onnx.numpy_helper.to_array(node.attribute[0].t)
                 for node in graph.node if node.op_type == "Constant" and node.attribute}
    constants.update({init.name: onnx.numpy_helper.to_array(init) for init in graph.initializer})
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def is_scalar(name: str, value: float) -> bool:
        array = constants.get(name)
        return array is not None and array.size == 1 and float(array.reshape(-1)[0]) == value

    replaced: dict[int, list] = {}
    dropped: set[int] = set()
    for clip in graph.node:
        if clip.op_type != "Clip" or len(clip.input) != 3:
            continue
        add = producer.get(clip.input[0])
        if add is None or add.op_type != "Add" or not is_scalar(add.input[1], 3.0):
            continue
        x = add.input[0]
        if not (is_scalar(clip.input[1], 0.0) and is_scalar(clip.input[2], 6.0)):
            continue
        users = consumers.get(clip.output[0], [])
        if len(users) != 1 or users[0].op_type != "Mul" or x not in users[0].input:
            continue
        mul = users[0]
        divs = consumers.get(mul.output[0], [])
        if len(divs) != 1 or divs[0].op_type != "Div" or not is_scalar(divs[0].input[1], 6.0):
            continue
        if len(consumers.get(add.output[0], [])) != 1:
            continue
        gate = clip.output[0] + "_hard_sigmoid"
        replaced[id(divs[0])] = [onnx.helper.make_node("HardSigmoid", [x], [gate], alpha=1.0 / 6.0, beta=0.5),
                                 onnx.helper.make_node("Mul", [x, gate], [divs[0].output[0]])]
        dropped |= {id(add), id(clip), id(mul)}
    nodes = []
    for node in graph.node:
        if id(node) in replaced:
            nodes += replaced[id(node)]
        elif id(node) not in dropped:
            nodes.append(node)
    used = {name for node in nodes for name in node.input} | {out.name for out in graph.output}
    nodes = [node for node in nodes if node.op_type != "Constant" or node.output[0] in used]
    del graph.node[:]
    graph.node.extend(nodes)


def _fold_scalar_affines(graph) -> None:
    """Fold `Mul(a) -> Add(b)` pairs with scalar a, b into an adjacent convolution:
    - after a Conv: conv_W,c(x) * a + b = conv_{aW, ac+b}(x);
    - before a 1x1 Conv without padding: conv_W,c(a h + b) = conv_{aW, c + b sum W}(h);
    - before any other Conv only the scale, since its zero padding sees the shift:
      conv_W(pad(a h + b)) = conv_{aW}(pad(h + b/a)), one Add left instead of Mul and Add.
    Only pairs whose intermediate values have no other reader, and convolutions whose weights
    no other node reads, are touched."""
    import onnx
    from onnx import numpy_helper

    # The exporter wrote every weight as a Constant node; as initializers they can be rewritten in place.
    for node in [node for node in graph.node if node.op_type == "Constant"]:
        if len(node.attribute) == 1 and node.attribute[0].name == "value":
            tensor = onnx.TensorProto()
            tensor.CopyFrom(node.attribute[0].t)
            tensor.name = node.output[0]
            graph.initializer.append(tensor)
            graph.node.remove(node)
    initializers = {init.name: init for init in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def scalar(name: str) -> float | None:
        if name not in initializers:
            return None
        value = numpy_helper.to_array(initializers[name])
        return float(value.reshape(-1)[0]) if value.size == 1 else None

    def only_reader(name: str):
        readers = consumers.get(name, [])
        return readers[0] if len(readers) == 1 else None

    def scale_shift(mul):
        """(a, b, input, add node) of a Mul(a, input) -> Add(b) pair, or None."""
        if mul.op_type != "Mul" or len(mul.input) != 2:
            return None
        for k in (0, 1):
            a = scalar(mul.input[k])
            add = only_reader(mul.output[0])
            if a is None or add is None or add.op_type != "Add" or mul.output[0] not in add.input:
                continue
            b = scalar(add.input[1 - list(add.input).index(mul.output[0])])
            if b is not None:
                return a, b, mul.input[1 - k], add
        return None

    def conv_params(conv):
        weight = conv.input[1]
        if weight not in initializers or len(consumers.get(weight, [])) != 1:
            return None
        if len(conv.input) > 2 and (conv.input[2] not in initializers or len(consumers.get(conv.input[2], [])) != 1):
            return None
        w = numpy_helper.to_array(initializers[weight]).astype(np.float32)
        c = (numpy_helper.to_array(initializers[conv.input[2]]).astype(np.float32) if len(conv.input) > 2
             else np.zeros(w.shape[0], np.float32))
        return w, c

    def set_params(conv, w, c) -> None:
        initializers[conv.input[1]].CopyFrom(numpy_helper.from_array(w.astype(np.float32), conv.input[1]))
        if len(conv.input) > 2:
            initializers[conv.input[2]].CopyFrom(numpy_helper.from_array(c.astype(np.float32), conv.input[2]))
        else:
            name = conv.output[0] + "_folded_bias"
            bias = numpy_helper.from_array(c.astype(np.float32), name)
            graph.initializer.append(bias)
            initializers[name] = graph.initializer[-1]
            conv.input.append(name)
            consumers[name] = [conv]

    def rename_input(node, old: str, new: str) -> None:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new

    dropped: set[int] = set()
    for mul in list(graph.node):
        if id(mul) in dropped:
            continue
        found = scale_shift(mul)
        if found is None:
            continue
        a, b, source, add = found
        before = producer.get(source)
        after = only_reader(add.output[0])
        if before is not None and before.op_type == "Conv" and only_reader(source) is mul \
                and (params := conv_params(before)) is not None:
            w, c = params
            set_params(before, w * a, c * a + b)
            for reader in consumers.get(add.output[0], []):
                rename_input(reader, add.output[0], source)
            consumers[source] = consumers.get(add.output[0], [])
            dropped |= {id(mul), id(add)}
        elif after is not None and after.op_type == "Conv" and after.input[0] == add.output[0] and a != 0.0 \
                and (params := conv_params(after)) is not None:
            w, c = params
            attrs = {attr.name: onnx.helper.get_attribute_value(attr) for attr in after.attribute}
            pointwise = w.shape[2:] == (1, 1) and not any(attrs.get("pads", [0])) \
                and attrs.get("auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET")
            if pointwise:
                set_params(after, w * a, c + b * w.sum(axis=(1, 2, 3)))
                rename_input(after, add.output[0], source)
                dropped |= {id(mul), id(add)}
            else:
                set_params(after, w * a, c)
                shift = add.output[0] + "_shift"
                graph.initializer.append(numpy_helper.from_array(np.array([b / a], np.float32), shift))
                initializers[shift] = graph.initializer[-1]
                del add.input[:]
                add.input.extend([source, shift])
                dropped.add(id(mul))
    nodes = [node for node in graph.node if id(node) not in dropped]
    used = {name for node in nodes for name in node.input} | {out.name for out in graph.output}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _build_session(num_threads: int):
    import onnxruntime

    path = model_path()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != _SHA256:
        raise RuntimeError(f"{path} is not the PP-OCRv4 recogniser the house model was trained on "
                           f"(sha256 {digest[:12]}..., expected {_SHA256[:12]}...)")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = num_threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(_built_graph(data, digest), options, providers=["CPUExecutionProvider"])


def _built_graph(data: bytes, digest: str) -> bytes:
    """The cut and folded graph, built once and kept in the model cache: building it imports
    `onnx` and rewrites the graph (~4.6 s of a ~5.5-s engine start). The cache key covers
    the source model and this file, so a change to how the graph is built builds it anew."""
    from engine.loader import cache_root

    recipe = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    cached = cache_root() / f"pp-ocrv4-rec-features-{digest[:16]}-{recipe}.onnx"
    if cached.is_file():
        return cached.read_bytes()
    built = truncated_graph(data, fuse=True).SerializeToString()
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(built)
        partial.replace(cached)   # atomic: a concurrent start never reads half a file
    except OSError:
        pass                      # a read-only cache only costs the next start the build again
    return built
