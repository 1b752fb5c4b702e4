# Tests python/darcy/torch_collections.py: EmbeddingBagCollection and EmbeddingCollection
# against torch's own modules over a dictionary-mapped copy of the same tables (a table shared
# by two features, sum, mean and weighted bags) through SGD steps, one request a step, and bad
# input refused before any row changes.
import numpy as np
import pytest
import torch

import darcy
import darcy.torch as dt

VOCAB = 30


def configs(kind=dt.EmbeddingBagConfig, dims=(4, 3), **pooling):
    """Table "users" (dim 4) serves user; table "ads" (dim 3, or as `dims` says) serves ad and
    clicked, sharing its rows, as a TorchRec model shares a table between features."""
    extra = [pooling.get("users", {}), pooling.get("ads", {})]
    return [kind("users", dims[0], ["user"], optimizer=darcy.SGDRule(0.1), **extra[0]),
            kind("ads", dims[1], ["ad", "clicked"], optimizer=darcy.SGDRule(0.1), **extra[1])]


def jagged(rng, batch, weighted=False):
    lengths = rng.integers(0, 4, size=3 * batch)          # feature-major: user, ad, clicked
    values = torch.from_numpy(rng.integers(0, VOCAB, size=int(lengths.sum())))
    weights = torch.from_numpy(rng.random(values.numel()).astype(np.float32)) if weighted \
        else None
    return dt.KeyedJaggedTensor(["user", "ad", "clicked"], values,
                                lengths=torch.from_numpy(lengths), weights=weights)


def mirrors(collection, mode):
    """nn.EmbeddingBag per table whose row i is the table's row of id i."""
    out = {}
    for table in collection.tables():
        bag = torch.nn.EmbeddingBag(VOCAB, table.dim, mode=mode, sparse=True)
        with torch.no_grad():
            bag.weight.copy_(torch.from_numpy(table.lookup(np.arange(VOCAB))))
        out[table.name] = bag
    return out


def theirs(bags, features, weighted):
    """The collection's answer from torch's modules: the features side by side."""
    table_of = {"user": "users", "ad": "ads", "clicked": "ads"}
    lengths = features.lengths().reshape(3, -1)
    ends = lengths.sum(1).cumsum(0).tolist()
    starts = [0] + ends[:-1]
    pooled = []
    for i, f in enumerate(features.keys()):
        ids = features.values()[starts[i]:ends[i]]
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths[i].cumsum(0)[:-1]])
        w = features.weights_or_none()[starts[i]:ends[i]] if weighted else None
        pooled.append(bags[table_of[f]](ids, offsets, per_sample_weights=w))
    return torch.cat(pooled, dim=1)


@pytest.mark.parametrize("dims", [(4, 3), (4, 4)], ids=["dims differ", "one dim"])
@pytest.mark.parametrize("mode,weighted", [("sum", False), ("mean", False), ("sum", True)])
def test_a_bag_collection_equals_embedding_bags_through_sgd_steps(session, rng, mode, weighted,
                                                                  dims):
    ours = dt.EmbeddingBagCollection(session, configs(dims=dims, users={"pooling": mode},
                                                      ads={"pooling": mode}))
    bags = mirrors(ours, mode)
    opt = torch.optim.SGD([p for b in bags.values() for p in b.parameters()], lr=0.1)
    for step in range(30):
        features = jagged(rng, 6, weighted)
        target = torch.from_numpy(rng.normal(size=(6, dims[0] + 2 * dims[1])).astype(np.float32))
        out = ours(features)
        want = theirs(bags, features, weighted)
        assert out.keys() == ["user", "ad", "clicked"]
        assert out.length_per_key() == [dims[0], dims[1], dims[1]]
        np.testing.assert_allclose(out.values().detach().numpy(), want.detach().numpy(),
                                   atol=1e-5, err_msg=f"step {step}")
        ((out.values() - target) ** 2).sum().backward()
        ((want - target) ** 2).sum().backward()
        opt.step()
        opt.zero_grad()
    for table in ours.tables():
        np.testing.assert_allclose(table.lookup(np.arange(VOCAB)),
                                   bags[table.name].weight.detach().numpy(), atol=1e-5)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_bags_of_one_id_each_pool_and_train_as_embedding_bags_do(session, rng, mode):
    ours = dt.EmbeddingBagCollection(session, configs(dims=(4, 4), users={"pooling": mode},
                                                      ads={"pooling": mode}))
    bags = mirrors(ours, mode)
    opt = torch.optim.SGD([p for b in bags.values() for p in b.parameters()], lr=0.1)
    features = dt.KeyedJaggedTensor(["user", "ad", "clicked"],
                                    torch.from_numpy(rng.integers(0, VOCAB, size=18)),
                                    lengths=torch.ones(18, dtype=torch.int64))
    out, want = ours(features), theirs(bags, features, False)
    np.testing.assert_allclose(out.values().detach().numpy(), want.detach().numpy(), atol=1e-6)
    (out.values() ** 2).sum().backward()
    (want ** 2).sum().backward()
    opt.step()
    for table in ours.tables():
        np.testing.assert_allclose(table.lookup(np.arange(VOCAB)),
                                   bags[table.name].weight.detach().numpy(), atol=1e-6)


def test_every_table_is_looked_up_in_one_request(session, rng, monkeypatch):
    ours = dt.EmbeddingBagCollection(session, configs())
    calls = []
    real = darcy._darcy._lookup_features
    monkeypatch.setattr(darcy._darcy, "_lookup_features",
                        lambda *a: calls.append(len(a[0])) or real(*a))
    ours(jagged(rng, 4)).values().sum().backward()
    ours.eval()
    ours(jagged(rng, 4))
    assert calls == [2, 2]


@pytest.mark.parametrize("dims", [(4, 3), (4, 4)], ids=["dims differ", "one dim"])
def test_features_in_another_order_than_the_collections(session, rng, dims):
    ours = dt.EmbeddingBagCollection(session, configs(dims=dims)).eval()
    features = jagged(rng, 4)
    lengths = features.lengths().reshape(3, -1)
    ends = lengths.sum(1).cumsum(0).tolist()
    starts = [0] + ends[:-1]
    part = [features.values()[s:e] for s, e in zip(starts, ends)]
    swapped = dt.KeyedJaggedTensor(["clicked", "user", "ad"], torch.cat([part[2], part[0],
                                                                         part[1]]),
                                   lengths=torch.cat([lengths[2], lengths[0], lengths[1]]))
    assert torch.equal(ours(swapped).values(), ours(features).values())


def test_the_pooled_rows_by_feature_and_empty_bags(session):
    ours = dt.EmbeddingBagCollection(session, configs()).eval()
    features = dt.KeyedJaggedTensor.from_offsets_sync(
        ["user", "ad", "clicked"], torch.tensor([1, 2, 3, 3]), torch.tensor([0, 2, 2, 3, 4, 4, 4]))
    assert features.offsets().tolist() == [0, 2, 2, 3, 4, 4, 4]
    out = ours(features).to_dict()
    users, ads = ours.tables()
    np.testing.assert_allclose(out["user"][0].numpy(), users.lookup(np.array([1, 2])).sum(0))
    np.testing.assert_allclose(out["user"][1].numpy(), np.zeros(4))
    np.testing.assert_allclose(out["ad"].numpy(), ads.lookup(np.array([3, 3])))
    np.testing.assert_allclose(out["clicked"].numpy(), np.zeros((2, 3)))


def test_an_embedding_collection_gives_each_ids_row_unpooled(session, rng):
    ours = dt.EmbeddingCollection(session, configs(dt.EmbeddingConfig)).eval()
    features = jagged(rng, 5)
    out = ours(features)
    users, ads = ours.tables()
    lengths = features.lengths().reshape(3, -1)
    ends = lengths.sum(1).cumsum(0).tolist()
    starts = [0] + ends[:-1]
    for i, (f, table) in enumerate([("user", users), ("ad", ads), ("clicked", ads)]):
        ids = features.values()[starts[i]:ends[i]].numpy()
        got = out[f].values().numpy()
        assert got.shape == (len(ids), table.dim)
        if len(ids):
            np.testing.assert_allclose(got, table.lookup(ids))
        assert out[f].lengths().tolist() == lengths[i].tolist()
        assert out[f].offsets()[-1].item() == len(ids)


def bad_inputs():
    ids = torch.tensor([1, 2, 3])
    ok = torch.tensor([1, 1, 1])
    return [
        ("unknown feature", dt.KeyedJaggedTensor(["user", "ad", "color"], ids, lengths=ok)),
        ("missing from the input", dt.KeyedJaggedTensor(["user", "ad"], ids[:2],
                                                        lengths=ok[:2])),
        ("lengths sum", dt.KeyedJaggedTensor(["user", "ad", "clicked"], ids,
                                             lengths=torch.tensor([1, 1, 2]))),
        ("integer tensor", dt.KeyedJaggedTensor(["user", "ad", "clicked"], ids.float(),
                                                lengths=ok)),
        ("weights", dt.KeyedJaggedTensor(["user", "ad", "clicked"], ids, lengths=ok,
                                         weights=torch.ones(2))),
        ("negative length", dt.KeyedJaggedTensor(["user", "ad", "clicked"], ids,
                                                 lengths=torch.tensor([2, -1, 2]))),
        ("KeyedJaggedTensor", {"user": ids}),
    ]


@pytest.mark.parametrize("why,features", bad_inputs(), ids=[b[0] for b in bad_inputs()])
def test_bad_input_raises_before_any_row_changes(session, why, features):
    ours = dt.EmbeddingBagCollection(session, configs())
    with pytest.raises(darcy.InvalidArgument, match=why):
        ours(features)
    assert all(t.stats()["rows"] == 0 for t in ours.tables())


def test_bad_configs_raise(session):
    with pytest.raises(darcy.InvalidArgument, match="pooling"):
        dt.EmbeddingBagCollection(session, configs(users={"pooling": "max"}))
    with pytest.raises(darcy.InvalidArgument, match="two tables"):
        dt.EmbeddingBagCollection(session, [dt.EmbeddingBagConfig("a", 2, ["f"]),
                                            dt.EmbeddingBagConfig("b", 2, ["f"])])
    with pytest.raises(darcy.InvalidArgument, match="no feature"):
        dt.EmbeddingBagCollection(session, [dt.EmbeddingBagConfig("a", 2, [])])


def test_outputs_follow_the_collections_device(session, rng):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ours = dt.EmbeddingBagCollection(session, configs(), device=device)
    out = ours(jagged(rng, 3))
    assert out.values().device.type == device
    out.values().sum().backward()          # the gradients come back from the device


def test_one_request_takes_tables_of_one_session_each_once(session):
    other = darcy.Session.local(shards=1)
    try:
        a, b = session.embedding("a", 2), other.embedding("b", 2)
        ids, counts, table_of = np.array([1, 2]), np.array([1, 1]), np.array([0, 1])
        lookup = darcy._darcy._lookup_features
        with pytest.raises(darcy.InvalidArgument, match="two sessions"):
            lookup([a._handle, b._handle], ids, counts, table_of, False)
        with pytest.raises(darcy.InvalidArgument, match="named twice"):
            lookup([a._handle, a._handle], ids, counts, table_of, False)
        with pytest.raises(darcy.InvalidArgument, match="counts sum to 3"):
            lookup([a._handle], ids, np.array([1, 2]), np.array([0, 0]), False)
        with pytest.raises(darcy.InvalidArgument, match="names table 1 of 1"):
            lookup([a._handle], ids, counts, table_of, False)
        with pytest.raises(darcy.InvalidArgument, match="negative id"):
            lookup([a._handle], np.array([1, -2]), counts, np.array([0, 0]), False)
        with pytest.raises(darcy.InvalidArgument, match="integer"):
            lookup([a._handle], np.array([1.0, 2.0]), counts, np.array([0, 0]), False)
    finally:
        other.close()


def test_a_refused_backward_changes_no_table(session):
    a = session.embedding("a", 2, optimizer=darcy.SGDRule(1.0))
    b = session.embedding("b", 3, optimizer=darcy.SGDRule(1.0))
    # feature 0 (table a): ids 1, 2, 1; feature 1 (table b): id 5; 3*2 + 1*3 values of rows.
    rows, pending = darcy._darcy._lookup_features(
        [a._handle, b._handle], np.array([1, 2, 1, 5]), np.array([3, 1]), np.array([0, 1]), True)
    assert rows.shape == (9,)
    before = [a.lookup(np.array([1, 2])), b.lookup(np.array([5]))]
    np.testing.assert_array_equal(rows[:6].reshape(3, 2), before[0][[0, 1, 0]])
    with pytest.raises(darcy.DimensionMismatch):
        pending.backward(np.ones(8, np.float32))
    with pytest.raises(darcy.InvalidArgument, match="float32"):
        pending.backward(np.ones(9))
    nan = np.ones(9, np.float32)
    nan[8] = np.nan
    with pytest.raises(darcy.NonFinite):
        pending.backward(nan)
    np.testing.assert_array_equal(a.lookup(np.array([1, 2])), before[0])
    np.testing.assert_array_equal(b.lookup(np.array([5])), before[1])
    pending.backward(np.ones(9, np.float32))     # still good, corrected: key 1's rows summed
    np.testing.assert_allclose(a.lookup(np.array([1, 2])), before[0] - [[2], [1]])
    np.testing.assert_allclose(b.lookup(np.array([5])), before[1] - 1)


def test_save_and_load_find_a_collections_tables(tmp_path, rng):
    path = str(tmp_path / "model")
    features = jagged(rng, 4)
    with darcy.Session.local(shards=2) as first:
        ours = dt.EmbeddingBagCollection(first, configs())
        ours(features).values().sum().backward()
        dt.save_checkpoint(ours, path, step=3)
        saved = [t.lookup(np.arange(VOCAB)) for t in ours.tables()]
    with darcy.Session.local(shards=2) as second:
        again = dt.EmbeddingBagCollection(second, configs())
        assert dt.load_checkpoint(again, path) == 3
        for table, rows in zip(again.tables(), saved):
            np.testing.assert_array_equal(table.lookup(np.arange(VOCAB)), rows)
