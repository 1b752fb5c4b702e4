"""One data-parallel trainer process for test_torch_distributed.py: rank RANK of WORLD under
torch.distributed (gloo, a file rendezvous), its dense part wrapped in DistributedDataParallel,
its tables one collection over the embedding service SERVICE that every rank shares. Trains a
small ranker on its share of a generated click stream (batch b goes to rank b % WORLD), then
rank 0 prints the test AUC as one JSON line: {"world", "auc", "steps"}."""

import argparse
import json

import numpy as np
import torch
import torch.distributed as dist

import darcy
import darcy.torch as dt

ROWS, TEST_ROWS, BATCH, KEYS = 12800, 4000, 64, 300
FEATURES = ["user", "ad"]


def stream(rows, seed):
    """(dense, per-feature ids, clicks) of a teacher whose click odds add a weight per id."""
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(rows, 3)).astype(np.float32)
    ids = rng.integers(0, KEYS, size=(rows, len(FEATURES)))
    weight = np.sin(ids * 1.7) * 1.5
    logit = weight.sum(1) + dense @ np.array([0.8, -0.5, 0.3])
    clicks = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return torch.from_numpy(dense), ids, torch.from_numpy(clicks)


def features(ids):
    return dt.KeyedJaggedTensor(FEATURES, torch.from_numpy(np.ascontiguousarray(ids.T).reshape(-1)),
                                lengths=torch.ones(ids.size, dtype=torch.int64))


class Ranker(torch.nn.Module):
    def __init__(self, session):
        super().__init__()
        self.ebc = dt.EmbeddingBagCollection(session, [
            dt.EmbeddingBagConfig(f, 4, [f], optimizer=darcy.AdagradRule(0.2),
                                  initializer=darcy.Zeros()) for f in FEATURES])
        self.top = torch.nn.Sequential(torch.nn.Linear(3 + 8, 16), torch.nn.ReLU(),
                                       torch.nn.Linear(16, 1))

    def forward(self, dense, kjt):
        return self.top(torch.cat([dense, self.ebc(kjt).values()], 1)).squeeze(1)


def auc(scores, labels):
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    return float((ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) /
                 (pos.sum() * (~pos).sum()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("seed")
    ap.add_argument("service")
    ap.add_argument("rank", type=int)
    ap.add_argument("world", type=int)
    ap.add_argument("rendezvous")
    o = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)  # every rank starts from the same dense weights
    dist.init_process_group("gloo", init_method=f"file://{o.rendezvous}", rank=o.rank,
                            world_size=o.world)
    with darcy.Session.connect(o.seed, timeout_ms=10000, service=o.service) as session:
        model = torch.nn.parallel.DistributedDataParallel(Ranker(session))
        opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
        dense, ids, clicks = stream(ROWS, 1)
        steps = 0
        # Every rank takes as many steps: DDP all-reduces at each of them.
        for b in range(o.rank, ROWS // BATCH // o.world * o.world, o.world):
            rows = slice(b * BATCH, (b + 1) * BATCH)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                model(dense[rows], features(ids[rows])), clicks[rows])
            opt.zero_grad()
            loss.backward()     # dense gradients all-reduced; the rows' sent to the shared table
            opt.step()
            steps += 1
        dist.barrier()          # every rank's updates are in the table
        if o.rank == 0:
            test_dense, test_ids, test_clicks = stream(TEST_ROWS, 2)
            model.eval()
            with torch.no_grad():
                scores = model.module(test_dense, features(test_ids)).numpy()
            print(json.dumps({"world": o.world, "auc": auc(scores, test_clicks.numpy()),
                              "steps": steps}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
