# apps/bench/torch_ctr.py on a small slice: every variant runs and the final JSON line names
# the metrics.
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_benchmark_prints_its_metrics_for_every_variant(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "apps" / "bench" / "torch_ctr.py"),
                          "--train-rows", "2000", "--test-rows", "500", "--work", str(tmp_path)],
                         capture_output=True, text=True, timeout=280, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    last = json.loads(run.stdout.strip().splitlines()[-1])
    assert last["bench"] == "torch_ctr"
    m = last["metrics"]
    for key in ("torch_darcy_vs_torch", "torch_darcy_auc_delta", "torch_examples_s",
                "darcy_examples_s", "darcy_remote_examples_s", "boundary_lookup_us_4096",
                "boundary_backward_us_4096", "torch_collection_vs_torch",
                "darcy_collection_examples_s", "dense_only_examples_s", "dense_only_vs_torch"):
        assert m[key] > 0 or key == "torch_darcy_auc_delta", (key, m)
    assert m["train_rows"] == 2000 and m["test_rows"] == 500
    # The same single trainer, in process and on node processes: the same updates.
    assert m["darcy_remote_auc"] == m["darcy_auc"]
