#!/usr/bin/python3
"""Benchmark: a PyTorch model trained online on a drifting click stream while `darcy serve`
answers it. A ranker (an EmbeddingBagCollection of 2 tables, 3 dense inputs) warms up on the
stream's first window and is exported twice: "fresh", which follows the trainer's syncs
(darcy.torch.write_sync and Client.sync every PERIOD seconds), and "stale", the same export
left as it is (the peer, in the same run and server). Each batch of the stream is scored by
both before the trainer learns from it; new ids keep arriving (each window draws its ids from
a range that moves on). Prints the JSON line {"bench":"torch_online","metrics":{...}} with
torch_freshness_p50_s and torch_freshness_p99_s (at every answer of "fresh", the time since
the step of the sync it holds was trained) and torch_online_auc_lift (the AUC of "fresh"'s
answers over "stale"'s, on the same rows).

Usage: apps/bench/torch_online.py [--seconds S] [--period P]
       (env: DARCY, the darcy binary; darcy importable: pip install ./python, make python or
       PYTHONPATH=build/python)"""

import argparse
import json
import os
import pathlib
import shutil
import tempfile
import time

import numpy as np
import torch

import darcy
import darcy.serving
import darcy.torch as dt
from peers.ctr_common import auc

ROOT = pathlib.Path(__file__).resolve().parents[2]
FEATURES = ["user", "ad"]
KEYS, WINDOW, SHIFT, BATCH = 400, 16000, 40, 64


def window(w):
    """(dense, ids, clicks) of window w: each id's weight is fixed, its range moves on."""
    rng = np.random.default_rng(w)
    dense = rng.normal(size=(WINDOW, 3)).astype(np.float32)
    ids = rng.integers(w * SHIFT, w * SHIFT + KEYS, size=(WINDOW, len(FEATURES)))
    logit = (np.sin(ids * 1.7) * 1.5).sum(1) + dense @ np.array([0.8, -0.5, 0.3])
    clicks = (rng.random(WINDOW) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return dense, ids, clicks


def features(ids):
    return dt.KeyedJaggedTensor(FEATURES, torch.from_numpy(np.ascontiguousarray(ids.T).reshape(-1)),
                                lengths=torch.ones(ids.size, dtype=torch.int64))


class Ranker(torch.nn.Module):
    def __init__(self, session):
        super().__init__()
        self.ebc = dt.EmbeddingBagCollection(session, [
            dt.EmbeddingBagConfig(f, 8, [f], optimizer=darcy.AdagradRule(0.2),
                                  initializer=darcy.Zeros()) for f in FEATURES])
        self.top = torch.nn.Sequential(torch.nn.Linear(3 + 16, 32), torch.nn.ReLU(),
                                       torch.nn.Linear(32, 1))

    def forward(self, dense, kjt):
        return self.top(torch.cat([dense, self.ebc(kjt).values()], 1)).squeeze(1)


def instances(dense, ids):
    return [{"dense": dense[i].tolist(), "user": [int(ids[i, 0])], "ad": [int(ids[i, 1])]}
            for i in range(len(dense))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--period", type=float, default=2.0)
    o = ap.parse_args()
    binary = os.environ.get("DARCY") or str(ROOT / "build" / "apps" / "darcy")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    work = pathlib.Path(tempfile.mkdtemp(prefix="darcy-torch-online-"))
    try:
        with darcy.Session.local(shards=2) as session:
            model = Ranker(session)
            opt = torch.optim.Adagrad(model.top.parameters(), lr=0.05)

            def learn(dense, ids, clicks):
                model.train()
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    model(torch.from_numpy(dense), features(ids)), torch.from_numpy(clicks))
                opt.zero_grad()
                loss.backward()
                opt.step()

            first = window(0)
            for b in range(0, WINDOW, BATCH):
                learn(*(part[b:b + BATCH] for part in first))
            example = (torch.from_numpy(first[0][:BATCH]), features(first[1][:BATCH]))
            dt.export(model, work / "exports" / "fresh", example)
            shutil.copytree(work / "exports" / "fresh", work / "exports" / "stale")
            trained_at = {}                        # step -> when it was trained
            ages, fresh_scores, stale_scores, labels = [], [], [], []
            with darcy.serving.LocalServer(work / "exports", binary=binary) as server:
                client = server.client
                step, w, syncs = 0, 1, 0
                start = last_sync = time.monotonic()
                while time.monotonic() - start < o.seconds:
                    dense, ids, clicks = window(w)
                    w += 1
                    for b in range(0, WINDOW, BATCH):
                        rows = slice(b, b + BATCH)
                        asked = instances(dense[rows], ids[rows])
                        fresh = client.predict("fresh", asked)
                        now = time.monotonic()
                        if "sync" in fresh:
                            ages.append(now - trained_at[fresh["sync"]["step"]])
                        fresh_scores += fresh["predictions"]
                        stale_scores += client.predict("stale", asked)["predictions"]
                        labels += clicks[rows].tolist()
                        learn(dense[rows], ids[rows], clicks[rows])
                        step += 1
                        trained_at[step] = time.monotonic()
                        if trained_at[step] - last_sync >= o.period:
                            last_sync = trained_at[step]
                            dt.write_sync(model, work / "sync", example, step=step)
                            client.sync("fresh", work / "sync")
                            syncs += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    labels = np.array(labels)
    fresh_auc = auc(np.array(fresh_scores), labels)
    stale_auc = auc(np.array(stale_scores), labels)
    print(f"{step} steps, {len(labels)} rows scored, {syncs} syncs every {o.period} s, "
          f"{w - 1} windows; AUC served fresh {fresh_auc:.4f}, stale {stale_auc:.4f}")
    metrics = {"torch_freshness_p50_s": round(float(np.percentile(ages, 50)), 3),
               "torch_freshness_p99_s": round(float(np.percentile(ages, 99)), 3),
               "torch_online_auc_lift": round(fresh_auc - stale_auc, 4),
               "fresh_auc": round(fresh_auc, 4), "stale_auc": round(stale_auc, 4),
               "syncs": syncs, "steps": step, "period_s": o.period, "cores": os.cpu_count()}
    print(json.dumps({"bench": "torch_online", "metrics": metrics}))


if __name__ == "__main__":
    main()
