#!/usr/bin/python3
"""DE-BERT (the DynamicEmbedding paper's masked language model) over darcy.torch: a small
nn.TransformerEncoder whose vocabulary lives in a Darcy table, on both sides: inputs through
DynamicEmbedding, masked words predicted by a sampled softmax over the same table (negatives
from the service's sampler) and at test time by the table's top-1 row. No dictionary: a word
first seen at test time gets a row instead of [UNK]. The peer is the same network over
nn.Embedding with the training split's vocabulary, [UNK] for the rest, and a full softmax.
Prints masked-word accuracy on held-out sentences for both, and a JSON line {"app":"bert",...}.

Usage: apps/python/bert.py --corpus FILE (one sentence a line, tokens split by spaces; e.g.
       `darcy word2vec prepare --format brown` of Brown) [--sentences N] [--epochs E] [--seed S]"""

import random

import torch

from words import (DIM, PAD, FixedVocabulary, accuracy, arguments, compare, darcy_loss, darcy_top1,
                   darcy_words, fit)
import darcy  # noqa: E402  (on the path words.py set)
import darcy.torch  # noqa: E402

HEADS, LAYERS, FF = 4, 2, 128
MASK = "[MASK]"


def read(path, count, max_len):
    sentences = []
    with open(path) as f:
        for line in f:
            words = line.split()
            if 4 <= len(words) <= max_len:
                sentences.append(words)
            if len(sentences) == count:
                break
    random.Random(5).shuffle(sentences)
    cut = len(sentences) * 9 // 10
    return sentences[:cut], sentences[cut:]


def masked(sentences, seed):
    """(inputs with masks, positions masked, their words): 15% of each sentence, at least 1."""
    rng = random.Random(seed)
    inputs, where, words = [], [], []
    for s in sentences:
        k = max(1, round(0.15 * len(s)))
        picks = sorted(rng.sample(range(len(s)), k))
        inputs.append([MASK if i in picks else w for i, w in enumerate(s)])
        where.append(picks)
        words.append([s[i] for i in picks])
    return inputs, where, words


class Encoder(torch.nn.Module):
    """Token rows (given by `embed`), positions, a TransformerEncoder."""

    def __init__(self, embed, max_len, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.embed = embed
        self.position = torch.nn.Embedding(max_len, DIM)
        layer = torch.nn.TransformerEncoderLayer(DIM, HEADS, FF, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, LAYERS)

    def forward(self, tokens, lengths):
        b, n = len(tokens), max(lengths)
        padded = [t + [PAD] * (n - len(t)) for t in tokens]
        x = self.embed(padded).reshape(b, n, DIM) + self.position.weight[:n]
        pad_mask = torch.arange(n)[None, :] >= torch.tensor(lengths)[:, None]
        return self.encoder(x, src_key_padding_mask=pad_mask)


def gather(hidden, where):
    return torch.cat([hidden[i, p] for i, p in enumerate(where)])


def masked_batches(sentences, epoch, batch):
    inputs, where, targets = masked(sentences, epoch)
    return [(inputs[i:i + batch], where[i:i + batch], targets[i:i + batch])
            for i in range(0, len(inputs), batch)]


def activations(net, part):
    """The activations of a batch's masked positions, with the words they should predict."""
    inputs, where, targets = part
    acts = gather(net(inputs, [len(s) for s in inputs]), where)
    return acts, [w for ws in targets for w in ws]


def run_darcy(train, test, epochs, batch, num_sampled, max_len, full_logits_below=0, seed=1):
    with darcy.Session.local(shards=2) as session:
        table = darcy_words(session)
        words = darcy.torch.DynamicEmbedding(table)
        net = Encoder(lambda padded: words([w for s in padded for w in s]), max_len, seed)
        table.lookup(sorted({w for s in train for w in s}))  # the sampler's first candidates

        def loss_of(part, seed):
            return darcy_loss(table, *activations(net, part), num_sampled, seed,
                              full_logits_below)

        fit(net.parameters(), epochs, lambda e: masked_batches(train, e, batch), loss_of)
        words.eval()
        return accuracy(net, masked_batches(test, 99, batch),
                        lambda part: activations(net, part), darcy_top1(table)), table.stats()["rows"]


def run_torch(train, test, epochs, batch, max_len, seed=1):
    vocab = FixedVocabulary(train, [PAD, MASK])
    net = Encoder(lambda padded: vocab.embed(padded), max_len, seed)

    def loss_of(part, _seed):
        return vocab.loss(*activations(net, part))

    fit(list(net.parameters()) + list(vocab.emb.parameters()), epochs,
        lambda e: masked_batches(train, e, batch), loss_of)
    return (accuracy(net, masked_batches(test, 99, batch), lambda part: activations(net, part),
                     vocab.top1), len(vocab.words))


def main():
    o = arguments(__doc__, "--sentences", 32)
    train, test = read(o.corpus, o.count, o.max_len)
    unseen = {w for s in test for w in s} - {w for s in train for w in s}
    compare("bert", "masked-word accuracy", (len(train), len(test), "sentences"), len(unseen),
            o.epochs,
            lambda: run_darcy(train, test, o.epochs, o.batch, o.num_sampled, o.max_len,
                              o.full_logits_below, o.seed),
            lambda: run_torch(train, test, o.epochs, o.batch, o.max_len, o.seed))


if __name__ == "__main__":
    main()
