"""What DE-BERT and DE-Seq2Seq share: a vocabulary in a Darcy table on both sides of a model
(inputs through darcy.torch.DynamicEmbedding, outputs through the service's sampled softmax
and, at test time, the table's top-1 row), and the peer's fixed vocabulary (a dictionary pass
over the training split, [UNK] for the rest, nn.Embedding rows tied to a full softmax)."""

import argparse
import json
import time

import torch

import darcy
import darcy.torch

DIM = 64
LR = 3e-3
PAD, UNK = "[PAD]", "[UNK]"


def darcy_words(session):
    """The table of words. Rows start N(0, 1), as nn.Embedding's do, and learn by the peer's
    rule: Adam at LR (the table's lazy Adam, each row counting its own updates)."""
    return session.embedding("words", DIM, optimizer=darcy.AdamRule(LR),
                             initializer=darcy.Normal(stddev=1.0))


def darcy_loss(table, acts, truth, num_sampled, seed, full_logits_below=0):
    """Sampled softmax of activations (n, DIM) against the rows of the words `truth`; the
    full softmax over every row while the table holds at most full_logits_below."""
    logits, labels = darcy.torch.sampled_logits(table, [[w] for w in truth], acts, num_sampled,
                                                seed=seed, full_logits_below=full_logits_below)
    return darcy.torch.sampled_softmax_loss(logits, labels)


def darcy_top1(table):
    """activations -> the word of the best row of each, over every row of the table."""
    return lambda acts: [hits[0][0] for hits in table.top_k(acts, 1)]


class FixedVocabulary:
    """The peer's words: `specials` first, then each word of the training split."""

    def __init__(self, sentences, specials):
        self.index = {w: i for i, w in enumerate(list(specials) + [UNK])}
        for s in sentences:
            for w in s:
                self.index.setdefault(w, len(self.index))
        self.words = list(self.index)
        self.emb = torch.nn.Embedding(len(self.words), DIM)
        torch.nn.init.normal_(self.emb.weight, std=1.0)

    def ids(self, words):
        unk = self.index[UNK]
        return torch.tensor([self.index.get(w, unk) for w in words])

    def embed(self, padded):
        """Rows of a padded batch (lists of equal length): (batch, length, DIM)."""
        return self.emb(torch.stack([self.ids(s) for s in padded]))

    def loss(self, acts, truth):
        return torch.nn.functional.cross_entropy(acts @ self.emb.weight.T, self.ids(truth))

    def top1(self, acts):
        scores = acts @ self.emb.weight.detach().numpy().T
        return [self.words[k] for k in scores.argmax(1)]


def accuracy(net, parts, activations, predict):
    """The share of words that `predict` (activations as a NumPy array -> a word each) gets
    right, over activations(part) -> (activations, true words) of each part, in eval mode."""
    net.eval()
    right = total = 0
    with torch.no_grad():
        for part in parts:
            acts, truth = activations(part)
            right += sum(p == w for p, w in zip(predict(acts.numpy()), truth))
            total += len(truth)
    return right / total


def fit(params, epochs, batches, loss_of):
    """Adam over `params`: for each epoch, loss_of(batch, seed).backward() per batch of
    batches(epoch)."""
    opt = torch.optim.Adam(params, lr=LR)
    for epoch in range(epochs):
        for i, batch in enumerate(batches(epoch)):
            loss = loss_of(batch, epoch * 100003 + i)
            opt.zero_grad()
            loss.backward()
            opt.step()


def arguments(doc, count_flag, max_len):
    """The flags of both apps, parsed; `count_flag` ("--sentences", "--pairs") is how many to
    read, as o.count. Sets torch's threads."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument(count_flag, type=int, default=20000, dest="count")
    ap.add_argument("--max-len", type=int, default=max_len)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--num-sampled", type=int, default=512)
    ap.add_argument("--full-logits-below", type=int, default=0,
                    help="train on every row's logit while the table holds at most this many "
                         "rows (0: always sample)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1,
                    help="the seed of both networks' initial weights (the same for each)")
    o = ap.parse_args()
    torch.set_num_threads(o.threads)
    return o


def compare(app, metric, sizes, unseen, epochs, run_darcy, run_torch):
    """Runs both models (each returns (accuracy, rows or words)), prints a line for each and the
    JSON line {"app", ..., "darcy_accuracy", "torch_accuracy", "accuracy_delta", ...}. `sizes`
    is (training count, test count, their unit)."""
    start = time.perf_counter()
    ours, rows = run_darcy()
    middle = time.perf_counter()
    theirs, vocab = run_torch()
    end = time.perf_counter()
    train, test, unit = sizes
    print(f"{train} training and {test} test {unit}; {unseen} test words never seen in training")
    print(f"darcy (vocabulary in the service, {rows} rows): {metric} {ours:.4f} "
          f"({middle - start:.1f} s)")
    print(f"torch (nn.Embedding, {vocab} words, [UNK] for the rest): {metric} {theirs:.4f} "
          f"({end - middle:.1f} s)")
    print(json.dumps({"app": app, "train": train, "test": test, "epochs": epochs,
                      "darcy_accuracy": ours, "torch_accuracy": theirs,
                      "accuracy_delta": round(ours - theirs, 4), "darcy_rows": rows,
                      "torch_vocab": vocab}))
