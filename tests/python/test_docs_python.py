# docs/python.md's examples run as written: the whole one learns, the collections one pools,
# the state one brings rows back, the serving one serves its model's scores, the sync loop's
# server holds its last step.
import pathlib
import re
import subprocess
import sys


def run_example(section, tmp_path, timeout):
    """The stdout of the first Python block after docs/python.md's heading `section`, run."""
    guide = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
    example = re.search(rf"## {section}.*?```python\n(.*?)```", guide.read_text(), re.S)
    assert example, f"docs/python.md has no example under '{section}'"
    script = tmp_path / "example.py"
    script.write_text(example.group(1))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=timeout)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_guides_example_runs_as_written(tmp_path):
    out = run_example("A whole example", tmp_path, 240)
    accuracy = float(re.search(r"held-out accuracy ([0-9.]+)", out).group(1))
    assert accuracy > 0.65, out


def test_the_collections_example_runs_as_written(tmp_path):
    out = run_example("Many tables in one call", tmp_path, 120)
    assert "['user_id', 'ad_id', 'clicked_ads'] torch.Size([2, 8])" in out, out


def test_the_state_example_runs_as_written(tmp_path):
    out = run_example("A model's state", tmp_path, 120)
    assert "the rows came back in both sessions" in out, out


def test_the_serving_example_runs_as_written(tmp_path):
    out = run_example("Serving a PyTorch model", tmp_path, 120)
    assert out.startswith("served ["), out


def test_the_sync_loop_runs_as_written(tmp_path):
    out = run_example("Keeping a served model fresh", tmp_path, 180)
    assert "served at step 200" in out, out
