#!/usr/bin/python3
"""DE-Seq2Seq (the DynamicEmbedding paper's encoder-decoder) over darcy.torch: a GRU encoder
reads a sentence and a GRU decoder writes the next one, with one vocabulary in a Darcy table
on both sides: source and target words through DynamicEmbedding, the next word trained with
the service's sampled softmax over the same table and predicted at test time as the table's
top-1 row. No dictionary: a word first seen at test time gets a row instead of [UNK]. The
peer is the same network over nn.Embedding with the training split's vocabulary, [UNK] for
the rest, and a full softmax. Prints next-word accuracy (teacher forced) on held-out pairs
for both, and a JSON line {"app":"seq2seq",...}.

Usage: apps/python/seq2seq.py --corpus FILE (one sentence a line in document order, tokens
       split by spaces; e.g. `darcy word2vec prepare --format brown` of Brown) [--pairs N]
       [--epochs E] [--seed S]"""

import random

import torch

from words import (DIM, PAD, FixedVocabulary, accuracy, arguments, compare, darcy_loss, darcy_top1,
                   darcy_words, fit)
import darcy  # noqa: E402  (on the path words.py set)
import darcy.torch  # noqa: E402

HIDDEN = 128
BOS, EOS = "<s>", "</s>"


def read(path, count, max_len):
    """(train, test) pairs of consecutive lines, both of 2 to max_len words; 9 to 1."""
    with open(path) as f:
        lines = [line.split() for _, line in zip(range(count + 1), f)]
    pairs = [(a, b) for a, b in zip(lines, lines[1:])
             if 2 <= len(a) <= max_len and 2 <= len(b) <= max_len]
    random.Random(5).shuffle(pairs)
    cut = len(pairs) * 9 // 10
    return pairs[:cut], pairs[cut:]


def padded(sentences):
    n = max(len(s) for s in sentences)
    return [s + [PAD] * (n - len(s)) for s in sentences], [len(s) for s in sentences]


class Seq2Seq(torch.nn.Module):
    """embed(padded batch) -> (batch, length, DIM) rows; forward gives, for each target
    position, an activation in the rows' space that should score the next word best."""

    def __init__(self, embed, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.embed = embed
        self.encoder = torch.nn.GRU(DIM, HIDDEN, batch_first=True)
        self.decoder = torch.nn.GRU(DIM, HIDDEN, batch_first=True)
        self.out = torch.nn.Linear(HIDDEN, DIM)

    def forward(self, pairs):
        """Activations of every real decoder step of the batch, flattened, with the words
        they should predict: each target sentence then </s>."""
        sources, source_lengths = padded([a for a, _ in pairs])
        inputs, lengths = padded([[BOS] + b for _, b in pairs])
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            self.embed(sources), source_lengths, batch_first=True, enforce_sorted=False)
        _, state = self.encoder(packed)
        hidden, _ = self.decoder(self.embed(inputs), state)
        real = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
        return self.out(hidden[real]), [w for _, b in pairs for w in b + [EOS]]


def batches(pairs, batch):
    return [pairs[i:i + batch] for i in range(0, len(pairs), batch)]


def shuffled(pairs, epoch):
    order = list(pairs)
    random.Random(epoch).shuffle(order)
    return order


def run_darcy(train, test, epochs, batch, num_sampled, full_logits_below=0, seed=1):
    with darcy.Session.local(shards=2) as session:
        table = darcy_words(session)
        words = darcy.torch.DynamicEmbedding(table)
        net = Seq2Seq(lambda rows: words([w for s in rows for w in s]).reshape(
            len(rows), len(rows[0]), DIM), seed)
        # The sampler's first candidates: the training split's words.
        table.lookup(sorted({w for pair in train for s in pair for w in s} | {BOS, EOS}))

        def loss_of(part, seed):
            acts, truth = net(part)
            return darcy_loss(table, acts, truth, num_sampled, seed, full_logits_below)

        fit(net.parameters(), epochs, lambda e: batches(shuffled(train, e), batch), loss_of)
        words.eval()
        return accuracy(net, batches(test, batch), net, darcy_top1(table)), table.stats()["rows"]


def run_torch(train, test, epochs, batch, seed=1):
    vocab = FixedVocabulary([s for pair in train for s in pair], [PAD, BOS, EOS])
    net = Seq2Seq(vocab.embed, seed)

    def loss_of(part, _seed):
        return vocab.loss(*net(part))

    fit(list(net.parameters()) + list(vocab.emb.parameters()), epochs,
        lambda e: batches(shuffled(train, e), batch), loss_of)
    return accuracy(net, batches(test, batch), net, vocab.top1), len(vocab.words)


def main():
    o = arguments(__doc__, "--pairs", 24)
    train, test = read(o.corpus, o.count, o.max_len)
    unseen = {w for _, b in test for w in b} - {w for pair in train for s in pair for w in s}
    compare("seq2seq", "next-word accuracy", (len(train), len(test), "pairs"), len(unseen),
            o.epochs,
            lambda: run_darcy(train, test, o.epochs, o.batch, o.num_sampled, o.full_logits_below,
                              o.seed),
            lambda: run_torch(train, test, o.epochs, o.batch, o.seed))


if __name__ == "__main__":
    main()
