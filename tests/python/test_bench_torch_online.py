# apps/bench/torch_online.py for a few seconds: the served model follows its syncs, and the
# final JSON line names the metrics.
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_benchmark_follows_its_syncs_and_prints_its_metrics():
    run = subprocess.run([sys.executable, str(ROOT / "apps" / "bench" / "torch_online.py"),
                          "--seconds", "5", "--period", "1"],
                         capture_output=True, text=True, timeout=200, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    last = json.loads(run.stdout.strip().splitlines()[-1])
    assert last["bench"] == "torch_online"
    m = last["metrics"]
    assert m["syncs"] >= 2, m
    assert 0 < m["torch_freshness_p50_s"] <= m["torch_freshness_p99_s"], m
    for key in ("torch_online_auc_lift", "fresh_auc", "stale_auc"):
        assert key in m, m
