"""loom.Session: tensors in and out, inference against the ONNX model's
reference outputs, and errors carrying the runtime's messages."""

from __future__ import annotations

import numpy as np
import pytest

import loom
from conftest import MODELS


@pytest.fixture(scope="module")
def inference_bundle(tmp_path_factory) -> str:
    return loom.compile(MODELS / "mlp.onnx", tmp_path_factory.mktemp("inf") / "mlp.loom")


def test_inference_matches_reference(inference_bundle):
    # mlp.out.logits.npy is PyTorch's output for mlp.in.x.npy
    # (test/models/generate.py).
    x = np.load(MODELS / "mlp.in.x.npy")
    expected = np.load(MODELS / "mlp.out.logits.npy")
    with loom.Session(inference_bundle) as session:
        assert session.inputs == ["x"]
        outputs = session.run(x=x)
    assert list(outputs) == ["logits"]
    np.testing.assert_allclose(outputs["logits"], expected, rtol=1e-5, atol=1e-6)


def test_tensors_are_described(runtime_bundle):
    with loom.Session(runtime_bundle, entry="train_step") as session:
        t = session.tensors
        assert t["fc1.weight"].kind == "parameter"
        assert t["fc1.weight"].dtype == "float32"
        assert t["fc1.weight"].shape == (64, 32)
        assert t["x"].kind == "input" and t["x"].shape == (16, 32)
        assert t["labels"].dtype == "int64"
        assert t["fc1.weight.next"].updates == "fc1.weight"
        assert t["fc1.weight.exp_avg"].kind == "state"
        assert t["hparam.lr"].kind == "hyperparameter"
        assert session.batch_size == 16
        assert (session.rank, session.world_size) == (0, 1)
        assert session.memory_stats()["parameter_bytes"] == sum(
            t[n].nbytes for n in session.parameters)


def test_view_shares_the_session_memory(runtime_bundle):
    with loom.Session(runtime_bundle, entry="train_step") as session:
        view = session.view("fc1.bias")
        assert not view.flags.writeable
        new = np.arange(64, dtype=np.float32)
        session.set("fc1.bias", new)
        # The view is the session's buffer: it shows the value just set.
        np.testing.assert_array_equal(view, new)
        copy = session.get("fc1.bias")
        session["fc1.bias"] = np.zeros(64, dtype=np.float32)
        np.testing.assert_array_equal(copy, new)
        # Other dtypes and layouts are converted on the way in.
        session.set("fc1.bias", np.arange(64, dtype=np.float64)[::-1][::-1])
        np.testing.assert_array_equal(session["fc1.bias"], new)


def test_errors_carry_the_runtime_message(runtime_bundle, fixed_bundle, tmp_path, mlp_onnx):
    with pytest.raises(loom.LoomError) as missing:
        loom.Session(tmp_path / "nothing.loom")
    assert "nothing.loom" in str(missing.value)
    assert missing.value.code == "not found"

    with pytest.raises(loom.LoomError, match='no entry point "predict"'):
        loom.Session(runtime_bundle, entry="predict")

    with loom.Session(runtime_bundle, entry="train_step") as session:
        with pytest.raises(loom.LoomError, match=r'"x" has shape \[16, 32\], got \[4, 32\]'):
            session.set("x", np.zeros((4, 32), np.float32))
        with pytest.raises(loom.LoomError, match='no tensor "y"'):
            session.get("y")
        with pytest.raises(loom.LoomError, match='"loss" is an output and cannot be set'):
            session.set("loss", np.float32(0))
        with pytest.raises(loom.LoomError, match='input "x" was not set') as unset:
            session.run()
        assert unset.value.code == "failed precondition"
        bad = {"x": np.zeros((16, 32), np.float32), "labels": np.full(16, 10)}
        with pytest.raises(loom.LoomError, match=r'"labels" holds 10 at element 0, outside \[0, 10\)'):
            session.train_step(bad)
        with pytest.raises(loom.LoomError, match='no run-time hyperparameter "momentum"'):
            session.set_hyperparameter("momentum", 0.9)
        with pytest.raises(loom.LoomError, match='hyperparameter "lr" must be finite'):
            session.set_hyperparameter("lr", float("nan"))
        assert session.hyperparameters["lr"] == 1e-3

    with loom.Session(fixed_bundle, entry="train_step") as session:
        assert session.hyperparameters == {}
        with pytest.raises(loom.LoomError, match="compile it with loomc --runtime-hyperparams"):
            session.set_hyperparameter("lr", 1e-3)
        before = session.get("fc1.weight")
        # A checkpoint of the run-time bundle carries hyperparameters this
        # bundle cannot take: refused before anything is set.
        with loom.Session(runtime_bundle, entry="train_step") as other:
            other.save_checkpoint(tmp_path / "runtime.ckpt")
        with pytest.raises(loom.LoomError, match="compile it with loomc --runtime-hyperparams"):
            session.load_checkpoint(tmp_path / "runtime.ckpt")
        np.testing.assert_array_equal(session.get("fc1.weight"), before)
        with pytest.raises(loom.LoomError, match="missing.ckpt") as absent:
            session.load_checkpoint(tmp_path / "missing.ckpt")
        assert absent.value.code == "not found"

    # SGD's state (momentum buffers) is not AdamW's.
    sgd = loom.compile(mlp_onnx, tmp_path / "sgd.loom", train=True, loss="cross-entropy:labels",
                       optimizer="sgd", momentum=0.9)
    with loom.Session(sgd, entry="train_step") as session:
        session.save_checkpoint(tmp_path / "sgd.ckpt")
    with loom.Session(fixed_bundle, entry="train_step") as session:
        with pytest.raises(loom.LoomError, match=r"does not match the session: it has no tensor \"fc1.bias.exp_avg\""):
            session.load_checkpoint(tmp_path / "sgd.ckpt")
        session.save_checkpoint(tmp_path / "adamw.ckpt")
    # A bundle with fc1 frozen keeps no optimizer state for it: the AdamW
    # checkpoint holds tensors it does not have.
    frozen = loom.compile(mlp_onnx, tmp_path / "frozen.loom", train=True, loss="cross-entropy:labels",
                          optimizer="adamw", lr=3e-3, weight_decay=0.01, freeze=["fc1.*"])
    with loom.Session(frozen, entry="train_step") as session:
        with pytest.raises(loom.LoomError, match=r'it holds "fc1.bias.exp_avg", which the bundle does not have'):
            session.load_checkpoint(tmp_path / "adamw.ckpt")

    with pytest.raises(loom.LoomError, match="unknown optimizer 'rmsprop'") as failed:
        loom.compile(mlp_onnx, tmp_path / "bad.loom", train=True, loss="cross-entropy:labels", optimizer="rmsprop")
    assert failed.value.code == "compile"


def test_closed_session_is_an_error(runtime_bundle):
    session = loom.Session(runtime_bundle, entry="train_step")
    session.close()
    session.close()
    with pytest.raises(loom.LoomError, match="closed"):
        session.run()
