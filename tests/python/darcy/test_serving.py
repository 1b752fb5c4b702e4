# Tests python/darcy/serving.py against a real `darcy serve` over a WALS export.
import os
import pathlib
import re
import subprocess
import time

import pytest

import darcy
import darcy.serving

DARCY = os.environ.get("DARCY") or str(
    pathlib.Path(darcy.__file__).resolve().parents[2] / "apps" / "darcy")


def run(*args):
    done = subprocess.run([DARCY, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(client, a darcy serve process) over a WALS export named "songs"."""
    tmp = tmp_path_factory.mktemp("serving")
    run("wals", "train", "--synthetic-rows", "300", "--synthetic-cols", "200",
        "--synthetic-nnz", "3000", "--dim", "8", "--iters", "2", "--quiet", "--out",
        str(tmp / "model"))
    run("wals", "export", "--model", str(tmp / "model"), "--out", str(tmp / "exports" / "songs"),
        "--shards", "2")
    serve = subprocess.Popen([DARCY, "serve", "--listen", "127.0.0.1:0", "--exports",
                              str(tmp / "exports")], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        port = None
        for line in serve.stdout:
            found = re.search(r"darcy serve listening on http://[0-9.]+:([0-9]+)", line)
            if found:
                port = int(found.group(1))
                break
        assert port, "darcy serve did not start"
        client = darcy.serving.Client(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 60
        while client.model("songs").get("state") != "available":
            assert time.monotonic() < deadline, "the model did not become available"
            time.sleep(0.05)
        yield client
    finally:
        serve.kill()
        serve.wait()


def test_topk_for_a_user_and_a_vector(served):
    answer = served.topk("songs", user="3", k=5)
    assert len(answer["items"]) == 5
    scores = [item["score"] for item in answer["items"]]
    assert scores == sorted(scores, reverse=True)
    assert len(served.topk("songs", vector=[0.5, -1, 2, 0.25, 1, 1, -0.5, 0], k=3)["items"]) == 3


def test_errors_come_back_as_darcy_exceptions(served):
    with pytest.raises(darcy.NotFound):
        served.topk("no-such-model", user="3")
    with pytest.raises(darcy.Error):
        served.topk("songs", vector=[1.0, 2.0], k=3)
    with pytest.raises(darcy.Unavailable):
        darcy.serving.Client("http://127.0.0.1:9", timeout=2).model("songs")
