# Fixtures of the apps/python tests: an app run on a corpus of lines, as a user runs it.
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def run_app(tmp_path):
    """run_app(script, lines, *flags): writes `lines` as the corpus, runs apps/python/SCRIPT on
    it with the flags, checks that it succeeds, and returns its final JSON line. Torch gets one
    thread: CTest runs another test beside it, and two threads of torch's on a shared core of
    two spin against it (seq2seq's run took 41 s with two, 25.5 s with one, the same result)."""
    def run(script, lines, *flags):
        corpus = tmp_path / "corpus.txt"
        corpus.write_text("\n".join(lines) + "\n")
        done = subprocess.run([sys.executable, str(ROOT / "apps" / "python" / script),
                               "--corpus", str(corpus), "--threads", "1", *flags],
                              capture_output=True, text=True, timeout=280)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])
    return run
