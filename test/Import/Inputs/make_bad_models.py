#!/usr/bin/env python3
"""Write the small ONNX models used by the importer's error-path tests.

Each model (except good_relu.onnx) is broken in exactly one way that Loom's
ONNX importer must reject with a clean diagnostic. The models are built with
onnx.helper and written with onnx.save *without* running onnx.checker, since
several are deliberately invalid.

All models use opset 17 and ir_version 8 so that older ONNX C++ libraries
(e.g. Debian's ONNX 1.12) can parse them. The output is deterministic:
fixed names, fixed data, no timestamps.

Regenerate with:
    python3 test/Import/Inputs/make_bad_models.py
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
IR_VERSION = 8
FLOAT = TensorProto.FLOAT


def tensor_vi(name, shape):
    return helper.make_tensor_value_info(name, FLOAT, shape)


def make_model(graph, opset=OPSET):
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name="loom-test-inputs",
    )
    model.ir_version = IR_VERSION
    return model


def save(model, name):
    path = os.path.join(OUT_DIR, name)
    onnx.save(model, path)
    return path


def write_bytes(data, name):
    path = os.path.join(OUT_DIR, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def good_relu_model():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu0")
    graph = helper.make_graph(
        [node], "good_relu", [tensor_vi("x", [2, 3])], [tensor_vi("y", [2, 3])]
    )
    return make_model(graph)


def bad_initializer_length():
    # dims say 2x3 = 6 floats, raw_data holds only 4 (16 bytes).
    w = TensorProto()
    w.name = "w"
    w.data_type = FLOAT
    w.dims.extend([2, 3])
    w.raw_data = np.arange(4, dtype="<f4").tobytes()
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add0")
    graph = helper.make_graph(
        [node],
        "bad_initializer_length",
        [tensor_vi("x", [2, 3])],
        [tensor_vi("y", [2, 3])],
        initializer=[w],
    )
    return make_model(graph)


def bad_output_not_produced():
    # Graph output `z` is produced by no node; `y` is computed but unused.
    node = helper.make_node("Relu", ["x"], ["y"], name="relu0")
    graph = helper.make_graph(
        [node],
        "bad_output_not_produced",
        [tensor_vi("x", [2, 3])],
        [tensor_vi("z", [2, 3])],
    )
    return make_model(graph)


def bad_cycle():
    # n1 uses `b` before n2 defines it, and n2 consumes n1's output: a cycle.
    n1 = helper.make_node("Add", ["x", "b"], ["a"], name="n1")
    n2 = helper.make_node("Relu", ["a"], ["b"], name="n2")
    graph = helper.make_graph(
        [n1, n2], "bad_cycle", [tensor_vi("x", [2, 3])], [tensor_vi("b", [2, 3])]
    )
    return make_model(graph)


def bad_unsupported_op():
    # Det is a real ONNX op (opset 11+) that Loom does not support.
    node = helper.make_node("Det", ["x"], ["y"], name="det_node")
    graph = helper.make_graph(
        [node], "bad_unsupported_op", [tensor_vi("x", [3, 3])], [tensor_vi("y", [])]
    )
    return make_model(graph)


def bad_shape_mismatch():
    # [2,3] x [4,5]: contracting dims 3 and 4 do not match.
    w = helper.make_tensor(
        "w", FLOAT, [4, 5], np.arange(20, dtype=np.float32).tolist()
    )
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph(
        [node],
        "bad_shape_mismatch",
        [tensor_vi("x", [2, 3])],
        [tensor_vi("y", [2, 5])],
        initializer=[w],
    )
    return make_model(graph)


def bad_opset():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu0")
    graph = helper.make_graph(
        [node], "bad_opset", [tensor_vi("x", [2, 3])], [tensor_vi("y", [2, 3])]
    )
    return make_model(graph, opset=99)


def bad_external_data():
    # Weights live in an external file that does not exist.
    w = TensorProto()
    w.name = "w"
    w.data_type = FLOAT
    w.dims.extend([2, 3])
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "missing_weights.bin"),
                       ("offset", "0"),
                       ("length", "24")):
        entry = w.external_data.add()
        entry.key = key
        entry.value = value
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add0")
    graph = helper.make_graph(
        [node],
        "bad_external_data",
        [tensor_vi("x", [2, 3])],
        [tensor_vi("y", [2, 3])],
        initializer=[w],
    )
    return make_model(graph)


def bad_dynamic_input():
    # Valid ONNX, but the leading dim is symbolic ("batch").
    node = helper.make_node("Relu", ["x"], ["y"], name="relu0")
    graph = helper.make_graph(
        [node],
        "bad_dynamic_input",
        [tensor_vi("x", ["batch", 3])],
        [tensor_vi("y", ["batch", 3])],
    )
    return make_model(graph)


def main():
    written = []
    for name, build in (
        ("bad_initializer_length.onnx", bad_initializer_length),
        ("bad_output_not_produced.onnx", bad_output_not_produced),
        ("bad_cycle.onnx", bad_cycle),
        ("bad_unsupported_op.onnx", bad_unsupported_op),
        ("bad_shape_mismatch.onnx", bad_shape_mismatch),
        ("bad_opset.onnx", bad_opset),
        ("bad_external_data.onnx", bad_external_data),
        ("bad_dynamic_input.onnx", bad_dynamic_input),
        ("good_relu.onnx", good_relu_model),
    ):
        written.append(save(build(), name))

    # A valid model cut off after the first 60% of its bytes.
    good = good_relu_model().SerializeToString()
    written.append(write_bytes(good[: int(len(good) * 0.6)], "truncated.onnx"))

    # Not a protobuf at all.
    written.append(
        write_bytes(b"this is not an onnx model\n" * 3, "not_onnx.onnx")
    )

    for path in written:
        size = os.path.getsize(path)
        assert size < 2048, f"{path} is {size} bytes"
        print(f"{os.path.basename(path)}: {size} bytes")


if __name__ == "__main__":
    main()
