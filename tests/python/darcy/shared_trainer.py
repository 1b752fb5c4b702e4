"""One asynchronous data-parallel trainer process for test_cluster.py: it joins the cluster at
SEED, shares the table of the embedding service SERVICE with the other trainers, and fits a
generated linear teacher (a row's values summed, summed over a bag of 4 keys) until STEPS.
Its own state (the step) goes to STATE every 5 steps; a trainer started again goes on from
there. With --stop-at N it stops itself (SIGSTOP) once step N is saved, so that the test can
kill it at a known step. Prints one JSON line at the end: {"worker", "resumed", "step"}."""

import argparse
import json
import os
import pathlib
import signal

import numpy as np
import torch

import darcy
import darcy.torch as dt

KEYS, BAG, BATCH, DIM = 400, 4, 32, 4


def teacher(keys):
    """Each key's weight: +0.5 or -0.5, fixed by the key."""
    return np.where(keys % 3 == 0, 0.5, -0.5).sum(axis=1).astype(np.float32)


def save_state(path, step):
    tmp = path.with_suffix(".tmp")
    tmp.write_text(str(step))
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("seed")
    ap.add_argument("service")
    ap.add_argument("worker", type=int)
    ap.add_argument("steps", type=int)
    ap.add_argument("state")
    ap.add_argument("--stop-at", type=int, default=0)
    o = ap.parse_args()
    torch.set_num_threads(1)
    state = pathlib.Path(o.state)
    step = int(state.read_text()) if state.exists() else 0
    resumed = step
    with darcy.Session.connect(o.seed, timeout_ms=5000, service=o.service) as session:
        table = session.embedding("shared", DIM, optimizer=darcy.SGDRule(0.02),
                                  initializer=darcy.Zeros())
        bag = dt.DynamicEmbeddingBag(table, mode="sum")
        while step < o.steps:
            rng = np.random.default_rng([o.worker, step])
            keys = rng.integers(0, KEYS, size=(BATCH, BAG))
            target = torch.from_numpy(teacher(keys))
            loss = ((bag(torch.from_numpy(keys)).sum(1) - target) ** 2).sum()
            loss.backward()
            step += 1
            if step % 5 == 0:
                save_state(state, step)
                if step == o.stop_at:
                    os.kill(os.getpid(), signal.SIGSTOP)
    print(json.dumps({"worker": o.worker, "resumed": resumed, "step": step}), flush=True)


if __name__ == "__main__":
    main()
