"""darcy.torch.look_ahead and the modules' prefetch: a loader's batches read ahead by a thread
that hands their keys to tables on disk, in order, with errors where their batch would be, and
training that learns bit for bit what it learns without it."""

import numpy as np
import pytest
import torch

import darcy
import darcy.torch as dt

DIM = 4


def batches(count, size=32, ids=2000, seed=3):
    """(ids, labels) batches of one id an example, ids drawn from a skewed range."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = (rng.pareto(1.0, size) * 50).astype(np.int64) % ids
        y = (x % 3 == 0).astype(np.float32)
        out.append((torch.from_numpy(x), torch.from_numpy(y)))
    return out


def train(store, window):
    """Losses of 60 SGD steps of a bag and a linear layer over a table behind a memory tier of
    16 rows a shard, with the look-ahead of `window` batches (0: none), and the table's stats."""
    torch.manual_seed(1)
    with darcy.Session.local(shards=2, store=store) as s:
        table = s.embedding("ids", DIM, optimizer=darcy.AdagradRule(0.1), cache_bytes=1)
        bag = dt.DynamicEmbeddingBag(table, mode="sum")
        head = torch.nn.Linear(DIM, 1)
        opt = torch.optim.SGD(head.parameters(), lr=0.1)
        data = batches(60)
        loop = dt.look_ahead(data, lambda b: bag.prefetch(b[0]), window) if window else data
        losses = []
        for x, y in loop:
            opt.zero_grad()
            out = head(bag(x.unsqueeze(1))).squeeze(1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(out, y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, table.stats()


def test_the_look_ahead_reads_rows_ahead_and_trains_bit_for_bit_as_without_it(tmp_path):
    plain, plain_stats = train(f"leveldb:{tmp_path / 'plain'}", 0)
    ahead, ahead_stats = train(f"leveldb:{tmp_path / 'ahead'}", 4)
    assert ahead == plain
    assert plain_stats["prefetched_rows"] == 0
    assert ahead_stats["prefetched_rows"] > 0
    assert ahead_stats["prefetched_rows"] <= ahead_stats["disk_reads"]
    assert ahead_stats["rows"] == plain_stats["rows"]


def test_batches_come_in_order_and_each_is_prefetched_once():
    seen = []
    got = list(dt.look_ahead(range(10), seen.append, window=2))
    assert got == list(range(10))
    assert seen == list(range(10))


def test_an_error_of_the_loader_or_of_prefetch_comes_where_its_batch_would():
    def loader():
        yield 1
        yield 2
        raise ValueError("bad file")

    got = []
    with pytest.raises(ValueError, match="bad file"):
        for b in dt.look_ahead(loader(), lambda b: None):
            got.append(b)
    assert got == [1, 2]

    def fail_on_three(b):
        if b == 3:
            raise RuntimeError("prefetch failed")

    got = []
    with pytest.raises(RuntimeError, match="prefetch failed"):
        for b in dt.look_ahead(range(10), fail_on_three, window=1):
            got.append(b)
    assert got[:4] == [0, 1, 2, 3]


def test_leaving_the_loop_early_stops_the_reader():
    loop = dt.look_ahead(range(1000), lambda b: None, window=3)
    assert next(loop) == 0
    loop.close()  # joins the reader thread: a hang would fail the suite's timeout


@pytest.mark.parametrize("window", [0, -1, 1.5, True, "4"])
def test_a_bad_window_or_prefetch_raises_invalid_argument(window):
    with pytest.raises(darcy.InvalidArgument, match="window"):
        next(dt.look_ahead([1], lambda b: None, window))
    with pytest.raises(darcy.InvalidArgument, match="prefetch"):
        next(dt.look_ahead([1], "not callable"))


def test_prefetch_of_a_table_in_memory_or_of_no_keys_changes_nothing():
    with darcy.Session.local(shards=2) as s:
        table = s.embedding("t", DIM)
        bag = dt.DynamicEmbeddingBag(table)
        bag.prefetch(torch.tensor([[1, 2], [3, 4]]))
        bag.prefetch([])
        assert table.stats()["rows"] == 0
        with pytest.raises(darcy.InvalidArgument):
            bag.prefetch(torch.tensor([0.5]))
