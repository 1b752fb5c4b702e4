# apps/python/image2label.py on a slice of Fashion-MNIST: labels in a Darcy table, trained with
# the service's sampler, reach the accuracy of the same network over a fixed label table.
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")


@pytest.mark.skipif(not (DATA / "train-images-idx3-ubyte.gz").exists(),
                    reason="dataset-fashion-mnist is not installed (make deps installs it)")
def test_labels_in_the_service_learn_as_a_fixed_label_table_does():
    run = subprocess.run([sys.executable, str(ROOT / "apps" / "python" / "image2label.py"),
                          "--train", "3000", "--test", "1000", "--epochs", "3",
                          # One torch thread beside CTest's other test (conftest.py's run_app).
                          "--threads", "1"],
                         capture_output=True, text=True, timeout=280)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["darcy_accuracy"] > 0.65, result
    assert result["darcy_accuracy"] > result["torch_accuracy"] - 0.05, result
