#!/usr/bin/python3
"""Benchmark: a PyTorch DLRM served by `darcy serve`. The CTR issue's DLRM (26 tables, one a
field, in a darcy.torch.EmbeddingBagCollection) trains briefly on generated Kaggle-profile rows,
is exported (darcy.torch.export) and served on 127.0.0.1, loaded by wrk with :predict requests
of 8 test rows each (apps/bench/serve/predict.lua). The peer, in the same run: the same
TorchScript module and the same tables' lookups (a collection over a session restored from the
export's tables) called in this process, one request of 8 rows after another, with the same
threads. Prints both and the JSON line {"bench":"torch_serve","metrics":{...}} with
torch_serve_vs_direct (served over direct requests/s), torch_serve_p99_ms and
torch_serve_failed_requests.

Usage: apps/bench/torch_serve.py [--train-rows N] [--seconds S] [--connections C]
       (env: DARCY, the darcy binary; darcy importable: pip install ./python, make python or
       PYTHONPATH=build/python)"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import numpy as np
import torch

import darcy
import darcy.serving
import darcy.torch
from peers.ctr_common import FIELDS, load
from torch_ctr import DIM, DLRM, field_ids, generate

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROWS_A_REQUEST = 8
NAMES = [f"f{f}" for f in range(FIELDS)]


class ServedBags(torch.nn.Module):
    """The collection of torch_ctr.py's darcy_collection variant, taking the jagged features
    from the model's input, as an exported model must."""

    def __init__(self, session):
        super().__init__()
        self.ebc = darcy.torch.EmbeddingBagCollection(
            session, [darcy.torch.EmbeddingBagConfig(f, DIM, [f], pooling="sum",
                                                     optimizer=darcy.SGDRule(0.1),
                                                     initializer=darcy.Uniform(-0.01, 0.01))
                      for f in NAMES])

    def forward(self, features):
        return self.ebc(features).values().view(-1, FIELDS, DIM)


def features_of(ids):
    """The KeyedJaggedTensor of (batch, 26) field ids: one id a field an example."""
    return darcy.torch.KeyedJaggedTensor(
        NAMES, torch.from_numpy(np.ascontiguousarray(ids.T).reshape(-1)),
        lengths=torch.ones(ids.size, dtype=torch.int64))


def train(model, x, ids, y, batch):
    dense = torch.optim.SGD([p for n, p in model.named_parameters()], lr=0.1)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for b in range(0, len(y), batch):
        out = model(torch.from_numpy(x[b:b + batch]), features_of(ids[b:b + batch]))
        loss = loss_fn(out, torch.from_numpy(y[b:b + batch]))
        dense.zero_grad()
        loss.backward()
        dense.step()


def bodies(x, ids, requests):
    """`requests` :predict bodies of 8 rows each, cycling over the rows."""
    out = []
    for r in range(requests):
        instances = []
        for i in range(ROWS_A_REQUEST):
            row = (r * ROWS_A_REQUEST + i) % len(x)
            instance = {"x": [round(float(v), 6) for v in x[row]]}
            instance.update({NAMES[f]: [int(ids[row, f])] for f in range(FIELDS)})
            instances.append(instance)
        out.append(json.dumps({"instances": instances}))
    return out


def direct_qps(export, x, ids, seconds):
    """Requests of 8 rows a second through the exported module and a collection over the
    export's tables restored into a session of this process."""
    version = max((d for d in os.listdir(export) if d.isdigit()), key=int)
    module = torch.jit.load(os.path.join(export, version, "module.pt"))
    with darcy.Session.local(shards=2) as session:
        session.restore(os.path.join(export, version, "embeddings"))
        bags = ServedBags(session).eval()
        requests, start = 0, time.perf_counter()
        with torch.no_grad():
            while time.perf_counter() - start < seconds:
                row = (requests * ROWS_A_REQUEST) % (len(x) - ROWS_A_REQUEST)
                rows = slice(row, row + ROWS_A_REQUEST)
                pooled = bags.ebc(features_of(ids[rows])).values()
                module(torch.from_numpy(x[rows]), pooled)
                requests += 1
        return requests / (time.perf_counter() - start)


def wrk(url, bodies_file, seconds, connections):
    env = dict(os.environ, MODEL="dlrm", BODIES=str(bodies_file))
    run = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{seconds}s",
                          "--timeout", "5s", "-s", str(ROOT / "apps/bench/serve/predict.lua"),
                          url], capture_output=True, text=True, env=env, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train-rows", type=int, default=50000)
    ap.add_argument("--test-rows", type=int, default=4096)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=str(ROOT / "build" / "bench-torch-ctr"))
    o = ap.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("torch_serve bench: wrk is missing (make deps installs it)")
    binary = os.environ.get("DARCY") or str(ROOT / "build" / "apps" / "darcy")
    work = pathlib.Path(o.work)
    work.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(o.threads)
    train_file, test_file = generate(binary, work, o.train_rows, o.test_rows)
    ytr, xtr, ctr_cats = load(train_file)
    _, xte, cte_cats = load(test_file)
    ids_tr, ids_te = field_ids(ctr_cats), field_ids(cte_cats)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="darcy-torch-serve-"))
    try:
        with darcy.Session.local(shards=2) as session:
            torch.manual_seed(1)
            model = DLRM(ServedBags(session))
            train(model, xtr, ids_tr, ytr, 128)
            example = (torch.from_numpy(xte[:16]), features_of(ids_te[:16]))
            export = darcy.torch.export(model, tmp / "exports" / "dlrm", example)
        direct = direct_qps(os.path.dirname(export), xte, ids_te, max(2, o.seconds // 2))
        bodies_file = tmp / "bodies.jsonl"
        bodies_file.write_text("\n".join(bodies(xte, ids_te, 512)) + "\n")
        args = ["--http-threads", str(o.threads), "--threads", str(o.threads)]
        with darcy.serving.LocalServer(tmp / "exports", args, binary=binary) as server:
            served = wrk(server.url, bodies_file, o.seconds, o.connections)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"torch {torch.__version__}, {o.threads} threads; {len(ytr)} training rows; "
          f"requests of {ROWS_A_REQUEST} rows")
    print(f"direct (module and lookups in process): {direct:.1f} requests/s")
    print(f"served ({o.connections} connections): {served}")
    failed = served["failed"] + served["socket_errors"]
    metrics = {"torch_serve_vs_direct": round(served["qps"] / direct, 3),
               "torch_serve_qps": served["qps"], "torch_serve_p50_ms": served["p50_ms"],
               "torch_serve_p99_ms": served["p99_ms"], "torch_serve_failed_requests": failed,
               "direct_qps": round(direct, 1), "rows_a_request": ROWS_A_REQUEST,
               "connections": o.connections, "threads": o.threads, "cores": os.cpu_count()}
    print(json.dumps({"bench": "torch_serve", "metrics": metrics}))


if __name__ == "__main__":
    main()
