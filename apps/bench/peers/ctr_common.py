"""What the CTR benchmarks' PyTorch code shares: `darcy-bench ctr`'s peer (ctr_torch_dlrm.py,
built into darcy-bench with this file in front of it) and apps/bench/torch_ctr.py both read the
generated Kaggle-profile rows, score AUC and build DLRM's first-pass dictionaries and MLPs with
it."""

import numpy as np
import torch

FIELDS = 26


def load(path):
    """(labels, log1p of the 13 integer fields, the 26 categorical fields as strings)."""
    labels, ints, cats = [], [], []
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            labels.append(float(p[0]))
            ints.append([float(v) if v else 0.0 for v in p[1:14]])
            cats.append(p[14:40])
    x = np.log1p(np.maximum(np.array(ints, dtype=np.float32), 0))
    return np.array(labels, dtype=np.float32), x, cats


def auc(scores, labels):
    """ROC AUC by ranks; tied scores share their mean rank."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    sorted_scores = scores[order]
    i = 0
    while i < len(sorted_scores):
        j = i
        while j + 1 < len(sorted_scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        if j > i:
            ranks[order[i:j + 1]] = (i + j + 2) / 2.0
        i = j + 1
    pos = labels == 1
    return float((ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) /
                 (pos.sum() * (~pos).sum()))


def dictionary_ids(train_cats, test_cats):
    """The reference DLRM's first pass: a dictionary per field over the training rows (0:
    empty or unseen). Returns the ids of both splits and each table's size."""
    vocab = [dict() for _ in range(FIELDS)]

    def ids(cats, grow):
        out = np.zeros((len(cats), FIELDS), dtype=np.int64)
        for i, row in enumerate(cats):
            for f in range(FIELDS):
                v = row[f]
                if not v:
                    continue
                k = vocab[f].get(v)
                if k is None:
                    if not grow:
                        continue
                    k = vocab[f][v] = len(vocab[f]) + 1
                out[i, f] = k
        return out

    a, b = ids(train_cats, True), ids(test_cats, False)
    return a, b, [len(d) + 1 for d in vocab]


def mlp(sizes, relu_last):
    """Linear layers of `sizes` with ReLU between them (and after the last with relu_last)."""
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or relu_last:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)
