#!/usr/bin/python3
"""Benchmark: the CTR issue's DLRM in PyTorch, trained in this process on the same generated
Kaggle-profile rows with 2 threads, its 26 tables either nn.EmbeddingBag(sparse=True) sized by
a dictionary pass (the peer, as DLRM's reference runs) or darcy.torch.DynamicEmbeddingBag over
one Darcy table (no dictionary), in this process and on 2 node processes, or a
darcy.torch.EmbeddingBagCollection of 26 tables, one a field, in this process. Prints a row per
variant, the cost of one lookup and one backward of 4,096 keys across the boundary, and the
JSON line {"bench":"torch_ctr","metrics":{...}} with torch_darcy_vs_torch and
torch_collection_vs_torch (examples/s over the peer's) and torch_darcy_auc_delta and
torch_collection_auc_delta. A last variant, dense_only, trains the dense part over fixed rows
(one gather, no table trained): dense_only_vs_torch is the ceiling of any table's ratio.

Usage: apps/bench/torch_ctr.py [--train-rows N] [--test-rows N] [--no-remote]
       (env: DARCY, the darcy binary; darcy importable: pip install ./python, make python or
       PYTHONPATH=build/python)"""

import argparse
import json
import os
import pathlib
import subprocess
import time

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
import darcy
import darcy.torch
from peers.ctr_common import FIELDS, auc, dictionary_ids, load, mlp
DIM = 16
BOTTOM = [512, 256, 64, DIM]
TOP = [512, 256]


def field_ids(cats):
    """Each field's own ids, for its own table: the hex value v (empty: 2^32)."""
    return raw_ids(cats) & ((1 << 33) - 1)


def raw_ids(cats):
    """Darcy's keys, no dictionary: field f's hex value v is the id f * 2^33 + v (empty:
    f * 2^33 + 2^32), one table for all fields."""
    out = np.empty((len(cats), FIELDS), dtype=np.int64)
    for i, row in enumerate(cats):
        for f in range(FIELDS):
            v = row[f]
            out[i, f] = (f << 33) + (int(v, 16) if v else 1 << 32)
    return out


class DLRM(torch.nn.Module):
    """DLRM with its embeddings given: `embed(ids)` maps (batch, 26) ids to (batch, 26, dim)."""

    def __init__(self, embed):
        super().__init__()
        self.embed = embed
        self.bot = mlp([13] + BOTTOM, True)
        k = FIELDS + 1
        self.top = mlp([DIM + k * (k - 1) // 2] + TOP + [1], False)
        self.li, self.lj = torch.tril_indices(k, k, -1)

    def forward(self, x, c):
        z0 = self.bot(x)
        t = torch.cat([z0.unsqueeze(1), self.embed(c)], 1)
        z = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]
        return self.top(torch.cat([z0, z], 1)).squeeze(1)


class PerFieldBags(torch.nn.Module):
    """The peer's tables: one nn.EmbeddingBag(sparse=True) a field, U(±sqrt(1/n))."""

    def __init__(self, sizes):
        super().__init__()
        self.bags = torch.nn.ModuleList()
        for n in sizes:
            bag = torch.nn.EmbeddingBag(n, DIM, mode="sum", sparse=True)
            bag.weight.data.uniform_(-np.sqrt(1.0 / n), np.sqrt(1.0 / n))
            self.bags.append(bag)

    def forward(self, c):
        offsets = torch.arange(c.shape[0])
        return torch.stack([b(c[:, f], offsets) for f, b in enumerate(self.bags)], 1)


class FixedRows(torch.nn.Module):
    """The ceiling of any table: rows gathered from 4,096 fixed ones, nothing trained, so the
    step costs the shared dense part and one gather."""

    def __init__(self):
        super().__init__()
        self.register_buffer("rows", torch.randn(4096, DIM) * 0.01)

    def forward(self, c):
        return self.rows[c % 4096]


class DarcyBags(torch.nn.Module):
    """Darcy's: one DynamicEmbeddingBag over one table, a bag of one key per field."""

    def __init__(self, table):
        super().__init__()
        self.bag = darcy.torch.DynamicEmbeddingBag(table, mode="sum")

    def forward(self, c):
        flat = c.reshape(-1)
        return self.bag(flat, torch.arange(flat.shape[0])).reshape(c.shape[0], FIELDS, DIM)


class CollectionBags(torch.nn.Module):
    """Darcy's as TorchRec has them: an EmbeddingBagCollection of 26 tables, one a field, each
    field's ids its own (no dictionary), every table looked up in one request."""

    def __init__(self, session, settings):
        super().__init__()
        self.fields = [f"f{f}" for f in range(FIELDS)]
        self.ebc = darcy.torch.EmbeddingBagCollection(
            session, [darcy.torch.EmbeddingBagConfig(f, DIM, [f], pooling="sum", **settings)
                      for f in self.fields])

    def forward(self, c):
        batch = c.shape[0]
        features = darcy.torch.KeyedJaggedTensor(
            self.fields, c.t().reshape(-1), lengths=torch.ones(FIELDS * batch, dtype=torch.int64))
        return self.ebc(features).values().view(batch, FIELDS, DIM)


def train_eval(name, model, sparse, data, epochs, batch):
    """Trains with SGD 0.1 for every parameter (as the reference); `sparse` are the peer's
    table parameters (empty for Darcy, whose shards apply SGD 0.1 themselves)."""
    (xtr, ctr, ytr), (xte, cte, yte) = data
    sparse_ids = {id(p) for p in sparse}
    dense = [p for p in model.parameters() if id(p) not in sparse_ids]
    opts = [torch.optim.SGD(dense, lr=0.1)] + ([torch.optim.SGD(sparse, lr=0.1)] if sparse
                                               else [])
    x, c, y = torch.from_numpy(xtr), torch.from_numpy(ctr), torch.from_numpy(ytr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    torch.manual_seed(1)
    start = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(len(y))
        for i in range(0, len(y), batch):
            idx = perm[i:i + batch]
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss_fn(model(x[idx], c[idx]), y[idx]).backward()
            for o in opts:
                o.step()
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        xt, ct = torch.from_numpy(xte), torch.from_numpy(cte)
        scores = np.concatenate([model(xt[i:i + 4096], ct[i:i + 4096]).numpy()
                                 for i in range(0, len(yte), 4096)])
    row = {"variant": name, "examples_s": epochs * len(y) / seconds, "seconds": seconds,
           "auc": auc(scores, yte)}
    print(f"{name:<14} {row['examples_s']:>12.1f} {seconds:>9.1f} {row['auc']:>8.4f}", flush=True)
    return row


def boundary_cost(table, keys, reps=20):
    """Median microseconds of one lookup_for_backward and one backward of `keys`."""
    lookups, backwards = [], []
    grads = np.full((len(np.unique(keys)), DIM), 1e-6, dtype=np.float32)
    for _ in range(reps):
        t0 = time.perf_counter()
        rows, _, pending = table.lookup_for_backward(keys)
        t1 = time.perf_counter()
        pending.backward(grads[:rows.shape[0]])
        t2 = time.perf_counter()
        lookups.append((t1 - t0) * 1e6)
        backwards.append((t2 - t1) * 1e6)
    return float(np.median(lookups)), float(np.median(backwards))


def generate(binary, work, train_rows, test_rows):
    train, test = work / f"train-{train_rows}.tsv", work / f"test-{test_rows}-{train_rows}.tsv"
    for path, rows, first in ((train, train_rows, 0), (test, test_rows, train_rows)):
        if not path.exists():
            subprocess.run([binary, "data", "ctr", "--rows", str(rows), "--out", str(path),
                            "--first-row", str(first)], check=True, capture_output=True)
    return train, test


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train-rows", type=int, default=500000)
    ap.add_argument("--test-rows", type=int, default=100000)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-remote", action="store_true", help="skip the 2-node-process row")
    ap.add_argument("--work", default=str(ROOT / "build" / "bench-torch-ctr"))
    o = ap.parse_args()
    binary = os.environ.get("DARCY") or str(ROOT / "build" / "apps" / "darcy")
    work = pathlib.Path(o.work)
    work.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(o.threads)
    train, test = generate(binary, work, o.train_rows, o.test_rows)
    ytr, xtr, ctr_cats = load(train)
    yte, xte, cte_cats = load(test)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {len(ytr)} training "
          f"rows, {len(yte)} test rows")
    print(f"{'variant':<14} {'examples/s':>12} {'seconds':>9} {'auc':>8}")
    a, b, sizes = dictionary_ids(ctr_cats, cte_cats)
    peer = PerFieldBags(sizes)
    rows = [train_eval("torch", DLRM(peer), list(peer.parameters()),
                       ((xtr, a, ytr), (xte, b, yte)), o.epochs, o.batch)]
    raw = ((xtr, raw_ids(ctr_cats), ytr), (xte, raw_ids(cte_cats), yte))
    settings = dict(optimizer=darcy.SGDRule(0.1), initializer=darcy.Uniform(-0.01, 0.01))
    with darcy.Session.local(shards=2) as session:
        table = session.embedding("ctr", DIM, **settings)
        torch.manual_seed(1)
        rows.append(train_eval("darcy", DLRM(DarcyBags(table)), [], raw, o.epochs, o.batch))
        lookup_us, backward_us = boundary_cost(table, raw[0][1].reshape(-1)[:4096])
        table_rows = table.stats()["rows"]
    per_field = ((xtr, field_ids(ctr_cats), ytr), (xte, field_ids(cte_cats), yte))
    with darcy.Session.local(shards=2) as session:
        torch.manual_seed(1)
        rows.append(train_eval("darcy_collection", DLRM(CollectionBags(session, settings)), [],
                               per_field, o.epochs, o.batch))
    torch.manual_seed(1)
    ceiling = train_eval("dense_only", DLRM(FixedRows()), [], ((xtr, a, ytr), (xte, b, yte)),
                         o.epochs, o.batch)
    print(f"across the boundary, 4,096 keys: lookup {lookup_us:.0f} us, backward "
          f"{backward_us:.0f} us; {table_rows} rows in the table")
    metrics = {"train_rows": len(ytr), "test_rows": len(yte), "threads": o.threads,
               "torch_examples_s": rows[0]["examples_s"], "torch_auc": rows[0]["auc"],
               "darcy_examples_s": rows[1]["examples_s"], "darcy_auc": rows[1]["auc"],
               "boundary_lookup_us_4096": lookup_us, "boundary_backward_us_4096": backward_us}
    if not o.no_remote:
        with darcy.LocalCluster(nodes=2, binary=binary, chaos=False, name_prefix="ctr") as c:
            with c.session(shards=1, timeout_ms=30000) as session:
                table = session.embedding("ctr", DIM, **settings)
                torch.manual_seed(1)
                remote = train_eval("darcy_remote", DLRM(DarcyBags(table)), [], raw, o.epochs,
                                    o.batch)
        metrics["darcy_remote_examples_s"] = remote["examples_s"]
        metrics["darcy_remote_auc"] = remote["auc"]
    metrics["darcy_collection_examples_s"] = rows[2]["examples_s"]
    metrics["darcy_collection_auc"] = rows[2]["auc"]
    metrics["torch_darcy_vs_torch"] = round(rows[1]["examples_s"] / rows[0]["examples_s"], 3)
    metrics["torch_darcy_auc_delta"] = round(rows[1]["auc"] - rows[0]["auc"], 4)
    metrics["torch_collection_vs_torch"] = round(rows[2]["examples_s"] / rows[0]["examples_s"], 3)
    metrics["torch_collection_auc_delta"] = round(rows[2]["auc"] - rows[0]["auc"], 4)
    metrics["dense_only_examples_s"] = ceiling["examples_s"]
    metrics["dense_only_vs_torch"] = round(ceiling["examples_s"] / rows[0]["examples_s"], 3)
    print(json.dumps({"bench": "torch_ctr", "metrics": metrics}))


if __name__ == "__main__":
    main()
