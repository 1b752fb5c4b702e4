#!/usr/bin/python3
"""DE-Image2Label (the DynamicEmbedding paper's image-to-label application) over darcy.torch:
Fashion-MNIST images map to an activation, labels are keys of a Darcy table (their class
names: no label dictionary), trained with a sampled softmax whose negatives come from the
service's candidate sampler (never a positive of the batch, hence small batches over 10
labels); a prediction is the table's top-1 row for the image. The peer is
the same network with nn.Embedding over the 10 fixed labels and a full softmax. Prints both
test accuracies and a JSON line {"app":"image2label",...}.

Usage: apps/python/image2label.py [--train N] [--test N] [--epochs E] [--data DIR]"""

import argparse
import gzip
import json
import pathlib
import time

import numpy as np
import torch

import darcy
import darcy.torch

CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
           "ankle-boot"]
DIM = 64


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(folder, split, count):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(pathlib.Path(folder) / f"{prefix}-images-idx3-ubyte.gz")[:count]
    labels = read_idx(pathlib.Path(folder) / f"{prefix}-labels-idx1-ubyte.gz")[:count]
    return torch.from_numpy(images.reshape(len(images), -1).astype(np.float32) / 255.0), labels


def encoder():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, DIM))


def train_darcy(train, test, epochs, batch, num_sampled, full_logits_below=0):
    x, y = train
    with darcy.Session.local(shards=2) as session:
        labels = session.embedding("labels", DIM, optimizer=darcy.AdagradRule(0.1),
                                   initializer=darcy.Normal(stddev=0.1))
        net = encoder()
        opt = torch.optim.Adagrad(net.parameters(), lr=0.05)
        # Every label once, so that the sampler knows the table's rows from the first step.
        labels.lookup(CLASSES)
        g = torch.Generator().manual_seed(2)
        for _ in range(epochs):
            perm = torch.randperm(len(y), generator=g)
            for i in range(0, len(y), batch):
                idx = perm[i:i + batch].numpy()
                positives = [[CLASSES[k]] for k in y[idx]]
                logits, targets = darcy.torch.sampled_logits(
                    labels, positives, net(x[idx]), num_sampled, seed=i,
                    full_logits_below=full_logits_below)
                loss = darcy.torch.sampled_softmax_loss(logits, targets)
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            hits = labels.top_k(net(test[0]).numpy(), 1)
        predicted = np.array([CLASSES.index(h[0][0]) for h in hits])
        return float((predicted == test[1]).mean())


def train_torch(train, test, epochs, batch):
    x, y = train
    net = encoder()
    table = torch.nn.Embedding(len(CLASSES), DIM)
    torch.nn.init.normal_(table.weight, std=0.1)
    opt = torch.optim.Adagrad(list(net.parameters()) + list(table.parameters()), lr=0.05)
    g = torch.Generator().manual_seed(2)
    for _ in range(epochs):
        perm = torch.randperm(len(y), generator=g)
        for i in range(0, len(y), batch):
            idx = perm[i:i + batch].numpy()
            logits = net(x[idx]) @ table.weight.T
            loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(y[idx]).long())
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        predicted = (net(test[0]) @ table.weight.T).argmax(1).numpy()
    return float((predicted == test[1]).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--train", type=int, default=60000)
    ap.add_argument("--test", type=int, default=10000)
    ap.add_argument("--epochs", type=int, default=5)
    # The service's sampler never draws a positive of the batch: with 10 labels, a batch of 8
    # leaves it about 4 to draw from.
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--num-sampled", type=int, default=4)
    ap.add_argument("--full-logits-below", type=int, default=0,
                    help="train on all labels' logits while the table holds at most this many "
                         "rows (0: always sample)")
    ap.add_argument("--threads", type=int, default=2)
    o = ap.parse_args()
    torch.set_num_threads(o.threads)
    train, test = load(o.data, "train", o.train), load(o.data, "test", o.test)
    start = time.perf_counter()
    ours = train_darcy(train, test, o.epochs, o.batch, o.num_sampled, o.full_logits_below)
    middle = time.perf_counter()
    theirs = train_torch(train, test, o.epochs, o.batch)
    end = time.perf_counter()
    softmax = "full softmax" if o.full_logits_below >= len(CLASSES) else "sampled softmax"
    print(f"darcy (labels in the service, {softmax}): accuracy {ours:.4f} "
          f"({middle - start:.1f} s)")
    print(f"torch (nn.Embedding over 10 labels, full softmax): accuracy {theirs:.4f} "
          f"({end - middle:.1f} s)")
    print(json.dumps({"app": "image2label", "train": len(train[1]), "test": len(test[1]),
                      "epochs": o.epochs, "full_logits_below": o.full_logits_below,
                      "darcy_accuracy": ours, "torch_accuracy": theirs,
                      "accuracy_delta": round(ours - theirs, 4)}))


if __name__ == "__main__":
    main()
