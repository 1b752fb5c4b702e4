# apps/bench/torch_serve.py on a small slice: the export is served, wrk loads it, and the final
# JSON line names the metrics, with no failed request.
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_benchmark_serves_the_export_and_prints_its_metrics(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "apps" / "bench" / "torch_serve.py"),
                          "--train-rows", "2000", "--test-rows", "256", "--seconds", "2",
                          "--connections", "4", "--work", str(tmp_path)],
                         capture_output=True, text=True, timeout=280, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    last = json.loads(run.stdout.strip().splitlines()[-1])
    assert last["bench"] == "torch_serve"
    m = last["metrics"]
    for key in ("torch_serve_vs_direct", "torch_serve_qps", "torch_serve_p99_ms", "direct_qps"):
        assert m[key] > 0, (key, m)
    assert m["torch_serve_failed_requests"] == 0, m
    assert m["rows_a_request"] == 8
