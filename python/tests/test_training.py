"""Training from Python: steps against PyTorch's reference trajectory,
run-time hyperparameters against compiled-in ones, checkpoints, and the
loom.train loop."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import loom
from conftest import E2E, loom_bin

REF = E2E / "finetune"
PARAMS = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"]


def run_steps(session: loom.Session, batch, steps: int):
    return [session.train_step(batch) for _ in range(steps)]


def test_steps_match_pytorch(runtime_bundle, data_a):
    # PyTorch's AdamW (lr 3e-3, weight decay 0.01) on task A, 10 full-batch
    # steps from the same initial weights (test/e2e/finetune/generate.py).
    with loom.Session(runtime_bundle, entry="train_step") as session:
        session.set_hyperparameters({"lr": 3e-3, "weight_decay": 0.01})
        losses = run_steps(session, data_a, 10)
        expected = np.load(REF / "pretrain.losses.npy")
        np.testing.assert_allclose(losses, expected, rtol=1e-5)
        for name in PARAMS:
            ref = np.load(REF / f"pretrain.{name}.npy")
            assert np.max(np.abs(session[name] - ref)) <= 1e-5 * np.max(np.abs(ref)), name


def test_runtime_hyperparameters_equal_compiled_in(runtime_bundle, fixed_bundle, data_a):
    with loom.Session(fixed_bundle, entry="train_step") as fixed, \
         loom.Session(runtime_bundle, entry="train_step") as runtime:
        runtime.set_hyperparameters({"lr": 3e-3, "weight_decay": 0.01})
        assert run_steps(runtime, data_a, 6) == run_steps(fixed, data_a, 6)
        for name in PARAMS:
            np.testing.assert_array_equal(runtime[name], fixed[name])
        # Another setting takes effect on the next step.
        runtime.set_hyperparameter("lr", 0.0)
        before = runtime["fc1.weight"]
        runtime.set_hyperparameter("weight_decay", 0.0)
        runtime.train_step(data_a)
        np.testing.assert_array_equal(runtime["fc1.weight"], before)
        assert runtime.hyperparameters["lr"] == 0.0


def test_checkpoint_resumes_exactly(runtime_bundle, data_a, tmp_path):
    with loom.Session(runtime_bundle, entry="train_step") as straight:
        straight.set_hyperparameters({"lr": 5e-3, "beta1": 0.8})
        expected = run_steps(straight, data_a, 8)
    with loom.Session(runtime_bundle, entry="train_step") as first:
        first.set_hyperparameters({"lr": 5e-3, "beta1": 0.8})
        losses = run_steps(first, data_a, 4)
        first.save_checkpoint(tmp_path / "half.ckpt")
    with loom.Session(runtime_bundle, entry="train_step") as second:
        second.load_checkpoint(tmp_path / "half.ckpt")
        assert second.hyperparameters["lr"] == 5e-3
        assert second.hyperparameters["beta1"] == 0.8
        losses += run_steps(second, data_a, 4)
    assert losses == expected


def test_checkpoint_is_read_by_loom_run(fixed_bundle, data_a, tmp_path):
    with loom.Session(fixed_bundle, entry="train_step") as session:
        run_steps(session, data_a, 3)
        session.save_checkpoint(tmp_path / "py.ckpt")
        trained = {name: session[name] for name in PARAMS}
    out = subprocess.run(
        [loom_bin("loom-run"), "train", fixed_bundle, "--init-from", str(tmp_path / "py.ckpt"),
         "--data", f"x={REF / 'a.x.npy'}", "--data", f"labels={REF / 'a.labels.npy'}",
         "--steps", "1", "--save-params", str(tmp_path / "after")],
        capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "initialized 6 of 6 parameters" in out.stdout
    # One more step from the checkpoint's weights: the bias moved, by at
    # most lr (AdamW's step size), from where Python left it.
    after = np.load(tmp_path / "after" / "fc1.bias.npy")
    assert 0 < np.max(np.abs(after - trained["fc1.bias"])) <= 3e-3 * 1.01


def test_train_loop(fixed_bundle, data_a):
    seen = []

    def callback(info: loom.StepInfo):
        seen.append(info)
        return info.step < 4

    data = {k: np.concatenate([v] * 4) for k, v in data_a.items()}  # 64 samples
    result = loom.train(fixed_bundle, data, steps=10, val_split=0.25, eval_every=2,
                        seed=3, callback=callback)
    assert result.steps == 4 and result.stopped_early
    assert [s.step for s in seen] == [1, 2, 3, 4]
    assert [s.epoch for s in seen] == [0, 0, 0, 1]  # 48 samples: 3 batches
    assert [step for step, _ in result.val_losses] == [2, 4]
    assert seen[1].val_loss == result.val_losses[0][1] and seen[0].val_loss is None
    assert all(s.lr == pytest.approx(3e-3) for s in seen)

    # Without shuffling, the loop's losses are those of the same steps by hand.
    manual = []
    with loom.Session(fixed_bundle, entry="train_step") as session:
        for start in (0, 16, 32, 0):
            manual.append(session.train_step({k: v[start:start + 16] for k, v in data.items()}))
    looped = loom.train(fixed_bundle, {k: v[:48] for k, v in data.items()}, steps=4, shuffle=False)
    assert looped.losses == manual


def test_train_loop_errors(fixed_bundle, data_a):
    class Stop(Exception):
        pass

    def stop(info):
        raise Stop()

    with pytest.raises(Stop):
        loom.train(fixed_bundle, data_a, steps=3, callback=stop)
    with pytest.raises(loom.LoomError, match="no data for input"):
        loom.train(fixed_bundle, {"x": data_a["x"]}, steps=1)
    with pytest.raises(loom.LoomError, match="has no input"):
        loom.train(fixed_bundle, {**data_a, "y": data_a["x"]}, steps=1)
    with pytest.raises(loom.LoomError, match="make no batch of 16"):
        loom.train(fixed_bundle, {k: v[:8] for k, v in data_a.items()}, steps=1)
