#!/usr/bin/env python3
"""Hyperparameter search over one compiled Loom bundle with Optuna.

Optuna's TPE sampler proposes the learning rate, weight decay, warmup steps
and batch size of AdamW training of an MLP classifier (test/e2e/training/
mlp.onnx) on a synthetic task; every trial reports its validation loss at
each evaluation, so that the pruner (Hyperband by default, or the median
rule) stops bad trials early. The bundles are compiled with
`loomc --runtime-hyperparams`: one compile per batch size serves every
learning rate, weight decay and warmup. With --jobs N, N processes share the
study through an SQLite file.

    python3 examples/tune/optuna_search.py --trials 40 --out runs/tune

prints each trial, then the best configuration, and writes Optuna's plots
(optimization history, parameter importances) as PNG files when matplotlib
is installed. Loom is found through LOOM_HOME or the loomc on PATH.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import loom  # noqa: E402

try:
    import optuna
except ImportError:  # pragma: no cover - a clear message instead of a trace
    sys.exit("optuna_search.py needs Optuna: apt-get install python3-optuna or pip install optuna")


def make_data(samples: int, seed: int):
    """A 10-class task on 32 features: labels are the argmax of a fixed random
    linear teacher with 10% of the labels flipped at random (so the validation
    loss has a floor and overfitting shows)."""
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((32, 10)).astype(np.float32)
    x = rng.standard_normal((samples, 32)).astype(np.float32)
    labels = np.argmax(x @ teacher, axis=1).astype(np.int64)
    flip = rng.random(samples) < 0.1
    labels[flip] = rng.integers(0, 10, flip.sum())
    held = samples // 4
    train = {"x": x[held:], "labels": labels[held:]}
    val = {"x": x[:held], "labels": labels[:held]}
    return train, val


class Bundles:
    """One compiled bundle per batch size (cached on disk under `out`)."""

    def __init__(self, model: Path, out: Path) -> None:
        self.model, self.out = model, out

    def get(self, batch_size: int) -> str:
        path = self.out / f"mlp-b{batch_size}.loom"
        done = path / "manifest.json"
        if not done.exists():
            # A process-private name renamed into place: parallel workers
            # may compile the same batch size at once.
            tmp = self.out / f".mlp-b{batch_size}.{os.getpid()}.loom"
            loom.compile(self.model, tmp, train=True, loss="cross-entropy:labels",
                         optimizer="adamw", lr_schedule="warmup", runtime_hyperparams=True,
                         input_shape=f"x={batch_size}x32")
            try:
                os.rename(tmp, path)
            except OSError:
                pass  # another worker's bundle is already there
        return str(path)


def objective_for(args, bundles: Bundles, train, val):
    def objective(trial: "optuna.Trial") -> float:
        hyper = {
            "lr": trial.suggest_float("lr", 1e-4, 3e-1, log=True),
            "weight_decay": trial.suggest_float("weight_decay", 1e-5, 1e-1, log=True),
            "warmup_steps": trial.suggest_int("warmup_steps", 0, args.steps // 4),
        }
        batch_size = trial.suggest_categorical("batch_size", [16, 32, 64])
        bundle = bundles.get(batch_size)

        def report(info: "loom.StepInfo") -> None:
            if info.val_loss is None:
                return
            trial.report(info.val_loss, info.step)
            if trial.should_prune():
                raise optuna.TrialPruned(f"pruned at step {info.step} (val_loss {info.val_loss:.4f})")

        result = loom.train(bundle, train, val_data=val, steps=args.steps, eval_every=args.eval_every,
                            seed=trial.number, hyperparameters=hyper, callback=report)
        return result.val_losses[-1][1]

    return objective


def make_pruner(name: str, args):
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=args.eval_every)
    return optuna.pruners.HyperbandPruner(min_resource=args.eval_every, max_resource=args.steps,
                                          reduction_factor=3)


def worker(args, storage: str, trials: int, index: int) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # Seeded by the worker's index, not its process id, so that a search
    # draws the same hyperparameters from one run to the next.
    study = optuna.load_study(study_name="loom", storage=storage,
                              sampler=optuna.samplers.TPESampler(seed=args.seed + 1 + index),
                              pruner=make_pruner(args.pruner, args))
    train, val = make_data(args.samples, args.seed)
    study.optimize(objective_for(args, Bundles(args.model, args.out), train, val), n_trials=trials)


def save_plots(study: "optuna.Study", out: Path) -> list:
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from optuna.visualization import matplotlib as plots
    except ImportError:
        print("matplotlib is not installed: no plots")
        return []
    written = []
    for name, draw in [("optimization_history", plots.plot_optimization_history),
                       ("param_importances", plots.plot_param_importances)]:
        try:
            ax = draw(study)
        except Exception as error:  # importances need two or more complete trials
            print(f"no {name} plot: {error}")
            continue
        path = out / f"{name}.png"
        ax.figure.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(ax.figure)
        written.append(path)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=40, help="trials in all (default 40)")
    parser.add_argument("--steps", type=int, default=120, help="training steps per trial (default 120)")
    parser.add_argument("--eval-every", type=int, default=10, help="steps between validation losses (default 10)")
    parser.add_argument("--samples", type=int, default=2048, help="samples of the synthetic task (default 2048)")
    parser.add_argument("--pruner", choices=["hyperband", "median"], default="hyperband")
    parser.add_argument("--jobs", type=int, default=1, help="trials run at once, each in its own process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", type=Path, default=ROOT / "test" / "e2e" / "training" / "mlp.onnx",
                        help="the ONNX MLP to tune (input x [batch, 32], 10 classes)")
    parser.add_argument("--out", type=Path, default=Path("tune-out"),
                        help="bundles, the study's database and the plots (default tune-out)")
    args = parser.parse_args()
    if args.trials < 1 or args.steps < args.eval_every or args.eval_every < 1 or args.jobs < 1:
        parser.error("need --trials >= 1, --eval-every >= 1 and --steps >= --eval-every")
    args.out.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=args.seed)
    pruner = make_pruner(args.pruner, args)
    if args.jobs == 1:
        study = optuna.create_study(study_name="loom", direction="minimize", sampler=sampler, pruner=pruner)
        train, val = make_data(args.samples, args.seed)
        study.optimize(objective_for(args, Bundles(args.model, args.out), train, val), n_trials=args.trials)
    else:
        db = args.out / "study.db"
        if db.exists():
            db.unlink()
        storage = f"sqlite:///{db}"
        study = optuna.create_study(study_name="loom", direction="minimize", storage=storage,
                                    sampler=sampler, pruner=pruner)
        shares = [args.trials // args.jobs + (i < args.trials % args.jobs) for i in range(args.jobs)]
        context = multiprocessing.get_context("spawn")
        procs = [context.Process(target=worker, args=(args, storage, n, i))
                 for i, n in enumerate(shares) if n]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        failed = [p.exitcode for p in procs if p.exitcode != 0]
        if failed:
            print(f"error: {len(failed)} worker process(es) failed", file=sys.stderr)
            return 1
        study = optuna.load_study(study_name="loom", storage=storage)

    states = optuna.trial.TrialState
    for t in study.trials:
        value = f"{t.value:.4f}" if t.value is not None else "-"
        last = max(t.intermediate_values) if t.intermediate_values else 0
        params = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in t.params.items())
        print(f"trial {t.number:3d} {t.state.name.lower():8s} at step {last:4d}  val_loss {value:>7s}  {params}")
    complete = study.get_trials(states=[states.COMPLETE])
    pruned = study.get_trials(states=[states.PRUNED])
    print(f"{len(study.trials)} trials: {len(complete)} complete, {len(pruned)} pruned "
          f"in {time.perf_counter() - started:.1f} s")
    if not complete:
        print("error: no trial completed", file=sys.stderr)
        return 1
    best = study.best_trial
    print(f"best trial {best.number}: val_loss {best.value:.4f}")
    for key, value in best.params.items():
        print(f"  {key} = {value}")
    for path in save_plots(study, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
