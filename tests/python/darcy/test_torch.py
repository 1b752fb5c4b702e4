# Tests python/darcy/torch.py: DynamicEmbedding and DynamicEmbeddingBag against torch's own
# modules over a dictionary-mapped copy of the same keys, learning, checkpoints, bad input.
import numpy as np
import pytest
import torch

import darcy
import darcy.torch as dt

DIM = 8


def mirrored(table, vocab, mode):
    """An nn.EmbeddingBag whose row i is the table's row of vocab[i]."""
    bag = torch.nn.EmbeddingBag(len(vocab), table.dim, mode=mode, sparse=True)
    with torch.no_grad():
        bag.weight.copy_(torch.from_numpy(table.lookup(vocab)))
    return bag


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_bag_equals_nn_embedding_bag_over_100_sgd_steps(session, mode):
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(40)]
    index = {k: i for i, k in enumerate(vocab)}
    table = session.embedding("bag", DIM, optimizer=darcy.SGDRule(0.05))
    ours = dt.DynamicEmbeddingBag(table, mode=mode)
    theirs = mirrored(table, vocab, mode)
    opt = torch.optim.SGD(theirs.parameters(), lr=0.05)
    for step in range(100):
        lengths = rng.integers(0, 6, size=5)
        keys = list(rng.choice(vocab, size=int(lengths.sum())))
        offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]))
        ids = torch.tensor([index[k] for k in keys], dtype=torch.int64)
        target = torch.from_numpy(rng.normal(size=(5, DIM)).astype(np.float32))
        out = ours(keys, offsets)
        want = theirs(ids, offsets)
        np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), atol=1e-6,
                                   err_msg=f"step {step}")
        ((out - target) ** 2).sum().backward()
        opt.zero_grad()
        ((want - target) ** 2).sum().backward()
        opt.step()
    np.testing.assert_allclose(table.lookup(vocab), theirs.weight.detach().numpy(), atol=1e-6)


def test_embedding_keeps_the_keys_shape_and_sends_gradients(session):
    table = session.embedding("ids", DIM, optimizer=darcy.SGDRule(1.0))
    emb = dt.DynamicEmbedding(table)
    ids = torch.tensor([[1, 2, 1], [3, 3, 3]])
    before = table.lookup(np.array([1, 2, 3]))
    out = emb(ids)
    assert out.shape == (2, 3, DIM)
    out.sum().backward()
    # Each key's gradient is its count of places: 2, 1 and 3 ones a value.
    np.testing.assert_allclose(table.lookup(np.array([1, 2, 3])),
                               before - np.array([[2.0], [1.0], [3.0]]), rtol=1e-6)


def test_eval_mode_and_no_grad_change_no_row(session):
    table = session.embedding("frozen", DIM, optimizer=darcy.SGDRule(1.0))
    emb = dt.DynamicEmbedding(table)
    before = table.lookup(["a"])
    emb.eval()
    assert not emb(["a"]).requires_grad
    emb.train()
    with torch.no_grad():
        emb(["a"]).sum()
    np.testing.assert_array_equal(table.lookup(["a"]), before)


def auc(labels, scores):
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    positives = labels.sum()
    negatives = len(labels) - positives
    return (ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives)


def test_a_small_ctr_model_learns(session):
    """Three categorical fields of raw ids, a hidden teacher; test AUC above 0.7."""
    rng = np.random.default_rng(11)
    fields, ids_a_field, rows = 3, 200, 6000
    teacher = rng.normal(scale=1.5, size=(fields, ids_a_field))
    x = rng.integers(0, ids_a_field, size=(rows, fields))
    logits = teacher[np.arange(fields), x].sum(1)
    y = (rng.random(rows) < 1 / (1 + np.exp(-logits))).astype(np.float32)
    # Field f's id i is the key f * 1000 + i: one table for all fields, no dictionary.
    keys = torch.from_numpy(x + np.arange(fields) * 1000)
    table = session.embedding("ctr", 4, optimizer=darcy.AdagradRule(0.1))
    emb = dt.DynamicEmbeddingBag(table, mode="sum")
    head = torch.nn.Linear(4, 1)
    opt = torch.optim.Adagrad(head.parameters(), lr=0.1)
    train, test = slice(0, 5000), slice(5000, rows)
    for epoch in range(3):
        for b in range(0, 5000, 100):
            batch = keys[train][b:b + 100]
            out = head(emb(batch)).squeeze(1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                out, torch.from_numpy(y[train][b:b + 100]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    emb.eval()
    with torch.no_grad():
        scores = head(emb(keys[test])).squeeze(1).numpy()
    assert auc(y[test], scores) > 0.7


def test_save_and_load_restore_tables_and_dense_weights(session, tmp_path):
    table = session.embedding("m", DIM, optimizer=darcy.SGDRule(0.5))
    model = torch.nn.Sequential(dt.DynamicEmbeddingBag(table, mode="mean"),
                                torch.nn.Linear(DIM, 1))
    keys = torch.tensor([[1, 2], [3, 4]])
    model(keys).sum().backward()
    dt.save_checkpoint(model, tmp_path / "ckpt", step=5)
    saved = model(keys).detach().clone()
    model(keys).sum().backward()
    with torch.no_grad():
        model[1].weight.add_(1.0)
    assert not torch.allclose(model(keys), saved)
    assert dt.load_checkpoint(model, tmp_path / "ckpt") == 5
    torch.testing.assert_close(model(keys).detach(), saved)


@pytest.mark.parametrize("call", [
    lambda bag: bag(["a", "b"], torch.tensor([1])),          # offsets not from 0
    lambda bag: bag(["a", "b"], torch.tensor([0, 2, 1])),    # decreasing
    lambda bag: bag(["a", "b"], torch.tensor([0, 3])),       # past the keys
    lambda bag: bag(["a", "b"], torch.tensor([0.0, 1.0])),   # float offsets
    lambda bag: bag(["a", "b"]),                             # 1-D keys without offsets
    lambda bag: bag(torch.tensor([0.5, 1.5]), torch.tensor([0])),  # float keys
    lambda bag: bag(42),                                     # no keys at all
], ids=["offset-start", "decreasing", "past-end", "float-offsets", "no-offsets", "float-keys",
        "int"])
def test_bad_bags_raise_invalid_argument_and_change_no_row(session, call):
    table = session.embedding("bad", DIM)
    bag = dt.DynamicEmbeddingBag(table, mode="sum")
    before = table.lookup(["a", "b"])
    with pytest.raises(darcy.InvalidArgument):
        call(bag)
    np.testing.assert_array_equal(table.lookup(["a", "b"]), before)


def test_a_nan_loss_raises_non_finite_and_changes_no_row(session):
    table = session.embedding("nan", DIM, optimizer=darcy.SGDRule(1.0))
    emb = dt.DynamicEmbedding(table)
    before = table.lookup(["a"])
    with pytest.raises(darcy.NonFinite):
        (emb(["a"]) * float("nan")).sum().backward()
    np.testing.assert_array_equal(table.lookup(["a"]), before)


def test_empty_bags_give_zeros_as_nn_embedding_bag_does(session):
    table = session.embedding("empty", DIM)
    bag = dt.DynamicEmbeddingBag(table, mode="mean")
    out = bag(["a", "b"], torch.tensor([0, 0, 2]))
    assert out.shape == (3, DIM)
    assert torch.equal(out[0], torch.zeros(DIM))
    assert torch.equal(out[2], torch.zeros(DIM))
    torch.testing.assert_close(out[1], torch.from_numpy(table.lookup(["a", "b"]).mean(0)))


def warmed_output_table(session, name):
    """A table with rows for the keys 0 … 9, which the sampler draws negatives from."""
    table = session.embedding(name, DIM, optimizer=darcy.SGDRule(0.5))
    table.lookup([str(i) for i in range(10)])
    return table


@pytest.mark.parametrize("positives", [
    [["1"], ["2"]],
    [["1"], [b"2"]],
    ["1", "2"],                                     # one key an example
    (("1",), ("2",)),
    np.array([1, 2]),                               # one id an example
    np.array([1, 2], dtype=np.uint32),
    np.array([[1], [2]]),                           # a row of ids an example
    [np.array([1]), np.array([2])],
    torch.tensor([1, 2]),
], ids=["lists-of-str", "bytes", "flat-str", "tuples", "1-d-ids", "uint-ids", "2-d-ids",
        "arrays-per-example", "tensor"])
def test_sampled_logits_take_every_key_form_lookup_takes(positives):
    acts = torch.from_numpy(np.random.default_rng(1).normal(size=(2, DIM)).astype(np.float32))

    def logits_in_a_fresh_session(keys):
        with darcy.Session.local(shards=2) as s:
            return dt.sampled_logits(warmed_output_table(s, "forms"), keys, acts, 4, seed=3)

    expected, expected_labels = logits_in_a_fresh_session([["1"], ["2"]])
    logits, labels = logits_in_a_fresh_session(positives)
    torch.testing.assert_close(logits, expected)
    torch.testing.assert_close(labels, expected_labels)


@pytest.mark.parametrize("positives,error", [
    ([[1], [2]], darcy.InvalidArgument),            # lists of integers
    ([1, 2], darcy.InvalidArgument),
    ([np.int64(1), np.int64(2)], darcy.InvalidArgument),
    (np.array([0.5, 1.5]), darcy.InvalidArgument),  # float ids
    (torch.tensor([0.5, 1.5]), darcy.InvalidArgument),
    (np.array([-1, 2]), darcy.InvalidArgument),     # a negative id
    (np.zeros((2, 1, 1), dtype=np.int64), darcy.InvalidArgument),
    ([["1"], []], darcy.InvalidArgument),           # an example without a positive
    ("12", darcy.InvalidArgument),                  # one string, not a list of examples
    (42, darcy.InvalidArgument),
    ([], darcy.EmptyBatch),
    (np.array([1, 2, 3]), darcy.DimensionMismatch),  # 3 examples, 2 activations
], ids=["int-lists", "ints", "numpy-scalars", "float-ids", "float-tensor", "negative",
        "3-d", "empty-example", "str", "int", "no-example", "count-mismatch"])
def test_bad_sampled_logits_keys_raise_darcy_errors_and_change_no_row(session, positives, error):
    table = warmed_output_table(session, "bad_forms")
    keys = [str(i) for i in range(10)]
    before = table.lookup(keys)
    rows = table.stats()["rows"]
    acts = torch.ones(2, DIM)
    with pytest.raises(error) as raised:
        dt.sampled_logits(table, positives, acts, 4)
    assert isinstance(raised.value, ValueError)
    assert str(raised.value).startswith(("invalid argument: ", "empty batch: ",
                                         "dimension mismatch: ")), str(raised.value)
    np.testing.assert_array_equal(table.lookup(keys), before)
    assert table.stats()["rows"] == rows


@pytest.mark.parametrize("sampler,weight", [
    (darcy.UniformSampler(), lambda f: 1.0),
    (darcy.UnigramSampler(0.5), lambda f: f ** 0.5),
    (darcy.UnigramSampler(), lambda f: f ** 0.75),
], ids=["uniform", "unigram-0.5", "unigram-default"])
def test_the_tables_sampler_sets_the_log_q_correction(session, sampler, weight):
    table = session.embedding("by_" + type(sampler).__name__ + str(getattr(sampler, "power", "")),
                              DIM, optimizer=darcy.SGDRule(0.5), sampler=sampler)
    # Key i is looked up i + 1 times: frequency i + 1.
    for i in range(10):
        table.lookup([str(k) for k in range(i, 10)])
    acts = torch.zeros(1, DIM)
    logits, _ = dt.sampled_logits(table, [["0"]], acts, 8, seed=4)
    total = sum(weight(f) for f in range(1, 11))
    # With zero activations a logit is -log(n * Q(key)); column 0 is the positive "0".
    torch.testing.assert_close(logits[0, 0], torch.tensor(-np.log(8 * weight(1) / total),
                                                          dtype=torch.float32))


def test_samplers_and_num_sampled_are_checked_before_anything_changes(session):
    with pytest.raises(darcy.InvalidArgument, match="sampler"):
        session.embedding("bad_sampler", DIM, sampler=darcy.AdagradRule())
    with pytest.raises(darcy.InvalidConfig, match="power"):
        session.embedding("bad_power", DIM, sampler=darcy.UnigramSampler(-1.0))
    table = warmed_output_table(session, "ten_rows")
    acts = torch.ones(1, DIM)
    with pytest.raises(darcy.InvalidArgument, match="num_sampled 11 is above the 10 rows"):
        dt.sampled_logits(table, [["1"]], acts, 11)
    with pytest.raises(darcy.InvalidArgument, match="num_sampled"):
        dt.sampled_logits(table, [["1"]], acts, 0)
    assert table.stats()["rows"] == 10
    # at_most: a growing table gives what it has, the 9 rows besides the positive.
    logits, labels = dt.sampled_logits(table, [["1"]], acts, 64, at_most=True)
    assert logits.shape == (1, 1 + 9) and labels.shape == (1, 10)


def test_full_logits_train_as_torch_s_full_softmax_over_the_same_rows(session):
    # A 10-label table trained 20 steps with full logits against nn.Linear holding its rows.
    rng = np.random.default_rng(5)
    table = warmed_output_table(session, "full")
    labels = [str(i) for i in range(10)]
    weight = torch.nn.Parameter(torch.from_numpy(table.lookup(labels)))
    opt = torch.optim.SGD([weight], lr=0.5)
    for step in range(20):
        acts = torch.from_numpy(rng.normal(size=(4, DIM)).astype(np.float32))
        truth = rng.integers(0, 10, size=4)
        ours = acts.clone().requires_grad_()
        logits, soft = dt.sampled_logits(table, [[labels[t]] for t in truth], ours, 4,
                                         full_logits_below=10)
        assert logits.shape == (4, 10), f"step {step}: {logits.shape}"
        loss = dt.sampled_softmax_loss(logits, soft)
        loss.backward()
        theirs = acts.clone().requires_grad_()
        want = torch.nn.functional.cross_entropy(theirs @ weight.t(), torch.from_numpy(truth))
        opt.zero_grad()
        want.backward()
        opt.step()
        torch.testing.assert_close(loss, want, msg=f"step {step}")
        torch.testing.assert_close(ours.grad, theirs.grad, msg=f"step {step}")
    np.testing.assert_allclose(table.lookup(labels), weight.detach().numpy(), atol=1e-5)


def test_full_logits_give_way_to_sampling_above_full_logits_below(session):
    table = warmed_output_table(session, "grown")
    acts = torch.ones(1, DIM)
    logits, _ = dt.sampled_logits(table, [["1"]], acts, 4, full_logits_below=9)
    assert logits.shape == (1, 1 + 4)
    with pytest.raises(darcy.BatchTooLarge, match="above max_rows 9"):
        table.full_logits([["1"]], acts.numpy(), 9)
    with pytest.raises(darcy.InvalidArgument, match="full_logits_below"):
        dt.sampled_logits(table, [["1"]], acts, 4, full_logits_below=-1)
    logits, labels, keys, _ = table.full_logits([["1"]], acts.numpy(), 10)
    assert sorted(keys) == sorted(str(i).encode() for i in range(10))
    assert labels[0, keys.index(b"1")] == 1 and labels.sum() == 1
    assert table.stats()["rows"] == 10


class OutputTableOnly(torch.nn.Module):
    """A model whose only table is the output side of a sampled softmax (as in DE-BERT's
    output, Seq2Seq's and Image2Label's labels): no DynamicEmbedding module."""

    def __init__(self, table):
        super().__init__()
        self.net = torch.nn.Linear(4, DIM)
        self.labels = table

    def forward(self, x, positives):
        return dt.sampled_logits(self.labels, positives, self.net(x), 4, seed=5)


def train_steps(model, x, positives, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        dt.sampled_softmax_loss(*model(x, positives)).backward()
        opt.step()


def test_save_keeps_a_table_used_only_through_sampled_logits(session, tmp_path):
    table = warmed_output_table(session, "labels")
    model = OutputTableOnly(table)
    x = torch.from_numpy(np.random.default_rng(2).normal(size=(6, 4)).astype(np.float32))
    positives = np.array([0, 1, 2, 3, 4, 5])
    keys = [str(i) for i in range(10)]
    train_steps(model, x, positives, 3)
    dt.save_checkpoint(model, tmp_path / "ckpt", step=3)
    saved_rows = table.lookup(keys)
    saved_weight = model.net.weight.detach().clone()
    train_steps(model, x, positives, 3)
    assert not np.array_equal(table.lookup(keys), saved_rows), "training moved the rows"
    assert dt.load_checkpoint(model, tmp_path / "ckpt") == 3
    np.testing.assert_array_equal(table.lookup(keys), saved_rows)
    torch.testing.assert_close(model.net.weight.detach(), saved_weight)


def test_save_takes_tables_the_model_does_not_hold(session, tmp_path):
    table = warmed_output_table(session, "outside")
    net = torch.nn.Linear(4, DIM)
    keys = [str(i) for i in range(10)]
    dt.save_checkpoint(net, tmp_path / "ckpt", step=2, tables=[table])
    saved = table.lookup(keys)
    table.apply_gradients(keys, np.ones((10, DIM), dtype=np.float32))
    with pytest.raises(darcy.NotFound):
        dt.load_checkpoint(net, tmp_path / "ckpt")             # the tables were saved; none given
    assert dt.load_checkpoint(net, tmp_path / "ckpt", tables=[table]) == 2
    np.testing.assert_array_equal(table.lookup(keys), saved)
    with pytest.raises(darcy.InvalidArgument):
        dt.save_checkpoint(net, tmp_path / "other", tables=["outside"])
