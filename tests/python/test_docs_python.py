# docs/python.md's examples run as written: the whole one learns, the collections one pools.
import pathlib
import re
import subprocess
import sys


def test_the_guides_example_runs_as_written(tmp_path):
    guide = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
    example = re.search(r"## A whole example.*?```python\n(.*?)```", guide.read_text(), re.S)
    assert example, "docs/python.md has no example"
    script = tmp_path / "example.py"
    script.write_text(example.group(1))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=240)
    assert run.returncode == 0, run.stderr
    accuracy = float(re.search(r"held-out accuracy ([0-9.]+)", run.stdout).group(1))
    assert accuracy > 0.65, run.stdout


def test_the_collections_example_runs_as_written(tmp_path):
    guide = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
    example = re.search(r"## Many tables in one call.*?```python\n(.*?)```", guide.read_text(),
                        re.S)
    assert example, "docs/python.md has no collections example"
    script = tmp_path / "collections.py"
    script.write_text(example.group(1))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "['user_id', 'ad_id', 'clicked_ads'] torch.Size([2, 8])" in run.stdout, run.stdout
