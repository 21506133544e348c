"""examples/tune/optuna_search.py on a small budget: TPE with Hyperband
pruning over one bundle per batch size; at least one trial is pruned."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = ROOT / "examples" / "tune" / "optuna_search.py"


@pytest.mark.parametrize("jobs", [1, 2])
def test_search_prunes_and_reports_the_best_trial(tmp_path, jobs):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--trials", "8", "--steps", "40", "--samples", "512",
         "--jobs", str(jobs), "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    summary = re.search(r"^8 trials: (\d+) complete, (\d+) pruned", out.stdout, re.M)
    assert summary, out.stdout
    complete, pruned = int(summary.group(1)), int(summary.group(2))
    assert complete >= 1 and pruned >= 1 and complete + pruned == 8
    # Pruned trials stopped before the last step.
    stops = [int(s) for s in re.findall(r"pruned\s+at step\s+(\d+)", out.stdout)]
    assert len(stops) == pruned and all(s < 40 for s in stops)
    best = re.search(r"^best trial \d+: val_loss ([0-9.]+)", out.stdout, re.M)
    assert best, out.stdout
    # Better than guessing among the 10 classes.
    assert float(best.group(1)) < math.log(10)
    for key in ("lr", "weight_decay", "warmup_steps", "batch_size"):
        assert re.search(rf"^  {key} = ", out.stdout, re.M), key
    # One bundle per batch size tried, and the plots (matplotlib and
    # scikit-learn are installed by scripts/install-deps.sh).
    assert 1 <= len(list(tmp_path.glob("mlp-b*.loom"))) <= 3
    assert (tmp_path / "optimization_history.png").stat().st_size > 1000
    assert (tmp_path / "param_importances.png").stat().st_size > 1000
