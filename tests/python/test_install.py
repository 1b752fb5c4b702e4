# `pip install --no-build-isolation ./python` into a fresh venv made with
# --system-site-packages (docs/python.md): with the repository's build reused, nothing is
# downloaded (--no-index), and from another folder the venv's python imports the installed
# package (its extension module and its `darcy` binary too, not the build's) and runs the
# guide's whole example.
import os
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _build_dir():
    # tests/CMakeLists.txt names the build's binary in $DARCY (BUILD/apps/darcy).
    return pathlib.Path(os.environ["DARCY"]).resolve().parents[1]


def test_pip_installs_the_package_into_a_venv_and_the_guides_example_runs_there(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DARCY", "DARCY_BINARY")}
    env["DARCY_BUILD_DIR"] = str(_build_dir())
    python = str(venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation",
                              "--no-index", str(ROOT / "python")],
                             capture_output=True, text=True, env=env, timeout=900)
    assert install.returncode == 0, install.stdout + install.stderr
    del env["DARCY_BUILD_DIR"]
    where = subprocess.run(
        [python, "-c", "import darcy, darcy._darcy, darcy.cluster; print(darcy.__file__); "
         "print(darcy._darcy.__file__); print(darcy.cluster._binary(None))"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert where.returncode == 0, where.stderr
    for path in where.stdout.split():
        assert pathlib.Path(path).resolve().is_relative_to(venv.resolve()), where.stdout
    guide = (ROOT / "docs" / "python.md").read_text()
    example = re.search(r"## A whole example.*?```python\n(.*?)```", guide, re.S)
    script = tmp_path / "example.py"
    script.write_text(example.group(1))
    run = subprocess.run([python, str(script)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=240)
    assert run.returncode == 0, run.stderr
    assert re.search(r"held-out accuracy ([0-9.]+)", run.stdout), run.stdout
