# Tests python/darcy/torch_export.py: the exported TorchScript, fed the pooled rows of the
# exported tables, gives the model's eval() output on inputs it was not traced on; the spec
# names every input; models it cannot export raise before anything is written; `darcy serve`
# answers the export's :predict with the model's eval() output, and follows the trainer's
# syncs (tables and dense part), read from their folder or pushed as messages, to its new output.
import concurrent.futures
import io
import json
import os
import pathlib

import numpy as np
import pytest
import torch

import darcy
import darcy.serving
import darcy.torch as dt

DARCY = os.environ.get("DARCY") or str(
    pathlib.Path(darcy.__file__).resolve().parents[2] / "apps" / "darcy")

USERS = darcy.torch.EmbeddingBagConfig("users", 4, ["user"], optimizer=darcy.SGDRule(0.3))
ADS = darcy.torch.EmbeddingBagConfig("ads", 3, ["ad", "clicked"], pooling="mean",
                                     optimizer=darcy.SGDRule(0.3))


class Ranker(torch.nn.Module):
    """Dense features, a bag collection over jagged features, and a bag of words."""

    def __init__(self, session):
        super().__init__()
        self.ebc = dt.EmbeddingBagCollection(session, [USERS, ADS])
        self.words = dt.DynamicEmbeddingBag(session.embedding("words", 2), mode="sum")
        self.mlp = torch.nn.Sequential(torch.nn.Linear(5 + 4 + 3 + 3 + 2, 8), torch.nn.ReLU(),
                                       torch.nn.Linear(8, 1))

    def forward(self, x, features, words):
        pooled = self.ebc(features)
        return self.mlp(torch.cat([x, pooled.values(), self.words(words)], 1)).squeeze(1)


def batch(rng, n):
    lengths = np.concatenate([np.ones(n), np.ones(n), rng.integers(0, 4, n)]).astype(np.int64)
    values = rng.integers(1, 30, int(lengths.sum()))
    features = dt.KeyedJaggedTensor(["user", "ad", "clicked"], torch.from_numpy(values),
                                    lengths=torch.from_numpy(lengths))
    return (torch.from_numpy(rng.normal(size=(n, 5)).astype(np.float32)), features,
            torch.from_numpy(rng.integers(1, 30, (n, 2))))


def trained(session, rng):
    model = Ranker(session)
    opt = torch.optim.SGD(model.mlp.parameters(), lr=0.1)
    for _ in range(5):
        model(*batch(rng, 6)).sum().backward()
        opt.step()
    return model


def pooled(session, pools, ids_of, n):
    """What serving computes for a slot: each pool's rows of each instance's ids, summed or
    averaged, side by side."""
    out = []
    for p in pools:
        table = session.tables[p["table"]]
        rows = np.zeros((n, p["dim"]), np.float32)
        for i, ids in enumerate(ids_of(p["feature"])):
            if len(ids):
                found = table.lookup(np.asarray(ids, np.int64)).sum(0)
                rows[i] = found / len(ids) if p["pooling"] == "mean" else found
        out.append(rows)
    return torch.from_numpy(np.concatenate(out, 1))


def test_the_exported_dense_part_on_pooled_rows_gives_the_eval_output(session, tmp_path):
    rng = np.random.default_rng(5)
    model = trained(session, rng)
    path = dt.export(model, tmp_path / "ranker", batch(rng, 4))
    assert os.path.basename(path) == "1"
    spec = json.loads((tmp_path / "ranker" / "1" / "spec.json").read_text())
    assert spec["dense"] == [{"name": "x", "shape": [5]}]
    assert [s["module"] for s in spec["slots"]] == ["ebc", "words"]
    assert [p["feature"] for p in spec["slots"][0]["pools"]] == ["user", "ad", "clicked"]
    assert spec["slots"][1]["pools"] == [{"feature": "words", "table": "words", "dim": 2,
                                          "pooling": "sum"}]
    _, module, tables = darcy._darcy._read_torch_export(str(tmp_path / "ranker"))
    assert os.path.isdir(tables)
    traced = torch.jit.load(io.BytesIO(module))
    x, features, words = batch(rng, 7)                 # not the batch size traced on
    model.eval()
    with torch.no_grad():
        want = model(x, features, words)
    bags = features.values().split(features.lengths().tolist())
    per = {k: bags[i * 7:(i + 1) * 7] for i, k in enumerate(features.keys())}
    per["words"] = list(words)
    slots = [pooled(session, s["pools"], lambda f: [v.tolist() for v in per[f]], 7)
             for s in spec["slots"]]
    got = traced(x, *slots)
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_each_export_is_the_next_version(session, tmp_path):
    rng = np.random.default_rng(1)
    model = trained(session, rng)
    paths = [dt.export(model, tmp_path / "m", batch(rng, 4), keep=2) for _ in range(3)]
    assert [os.path.basename(p) for p in paths] == ["1", "2", "3"]
    assert sorted(os.listdir(tmp_path / "m")) == ["2", "3", "MANIFEST"]


class Sequence(torch.nn.Module):
    def __init__(self, session):
        super().__init__()
        self.emb = dt.DynamicEmbedding(session.embedding("t", 2))

    def forward(self, ids):
        return self.emb(ids).sum((1, 2))


class BatchFromIds(torch.nn.Module):
    def __init__(self, session):
        super().__init__()
        self.bag = dt.DynamicEmbeddingBag(session.embedding("t", 2), mode="sum")

    def forward(self, ids):
        return self.bag(ids).reshape(ids.shape[0] * 2)    # the batch size baked in the trace


class TwoOutputs(torch.nn.Module):
    def __init__(self, session):
        super().__init__()
        self.bag = dt.DynamicEmbeddingBag(session.embedding("t", 2), mode="sum")

    def forward(self, ids):
        out = self.bag(ids)
        return out, out


class NoTables(torch.nn.Module):
    def __init__(self, session):
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.lin(x)


IDS = torch.tensor([[1, 2], [3, 4], [5, 6], [7, 8]])
BAD = [
    ("an unpooled embedding", Sequence, (IDS,), "no export yet"),
    ("a batch size taken from the ids", BatchFromIds, (IDS,), "follow the batch"),
    ("two outputs", TwoOutputs, (IDS,), "not one float tensor"),
    ("no Darcy module", NoTables, (torch.ones(4, 2),), "calls no Darcy module"),
    ("a list for an input", NoTables, ([1.0, 2.0],), "tensors and KeyedJaggedTensors only"),
]


@pytest.mark.parametrize("what, kind, inputs, message", BAD, ids=[c[0] for c in BAD])
def test_a_model_it_cannot_trace_raises_and_writes_nothing(session, tmp_path, what, kind,
                                                           inputs, message):
    model = kind(session)
    with pytest.raises(darcy.InvalidArgument, match=message):
        dt.export(model, tmp_path / "bad", inputs)
    assert not (tmp_path / "bad").exists()
    assert model.training                              # left as it was


def instances_of(x, features, words):
    """The request's instances for a batch: dense x, each feature's ids, the words' bag."""
    n = x.shape[0]
    bags = features.values().split(features.lengths().tolist())
    out = []
    for i in range(n):
        instance = {"x": x[i].tolist(), "words": words[i].tolist()}
        for f, key in enumerate(features.keys()):
            instance[key] = bags[f * n + i].tolist()
        out.append(instance)
    return out


@pytest.fixture
def serving(tmp_path):
    """A function that starts `darcy serve` over tmp_path/exports and gives its client."""
    servers = []

    def start():
        servers.append(darcy.serving.LocalServer(tmp_path / "exports", binary=DARCY))
        return servers[-1].client
    yield start
    for server in servers:
        server.close()


def test_darcy_serve_answers_with_the_eval_output(session, tmp_path, serving):
    rng = np.random.default_rng(9)
    model = trained(session, rng)
    dt.export(model, tmp_path / "exports" / "ranker", batch(rng, 4))
    client = serving()
    described = client.model("ranker")
    assert described["kind"] == "pytorch"
    assert described["inputs"] == ["x", "user", "ad", "clicked", "words"]
    model.eval()
    inputs = batch(rng, 9)
    with torch.no_grad():
        want = model(*inputs).numpy()
    answer = client.predict("ranker", instances_of(*inputs))
    np.testing.assert_allclose(answer["predictions"], want, rtol=1e-5, atol=1e-5)
    # Requests at once, batched together by the server, each get their own instances' scores.
    parts = [instances_of(*inputs)[i:i + 3] for i in range(0, 9, 3)]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda p: client.predict("ranker", p), parts))
    np.testing.assert_allclose(sum((a["predictions"] for a in answers), []), want, rtol=1e-5,
                               atol=1e-5)


BAD_REQUESTS = [
    ("a feature missing", lambda i: {k: v for k, v in i.items() if k != "user"}, "missing"),
    ("an unknown field", lambda i: {**i, "age": 3}, "not an input of the model"),
    ("a dense input too short", lambda i: {**i, "x": i["x"][:2]}, "2 values, not 5"),
    ("a float id", lambda i: {**i, "user": [1.5]}, "an integer or a string"),
    ("a string for a number", lambda i: {**i, "x": ["a"] * 5}, "not a finite number"),
]


@pytest.mark.parametrize("what, change, message", BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
def test_bad_instances_get_400_naming_the_field(session, tmp_path, serving, what, change,
                                                message):
    rng = np.random.default_rng(9)
    dt.export(trained(session, rng), tmp_path / "exports" / "ranker", batch(rng, 4))
    client = serving()
    good = instances_of(*batch(rng, 2))
    with pytest.raises(darcy.InvalidArgument, match=message):
        client.predict("ranker", [good[0], change(good[1])])
    assert len(client.predict("ranker", good)["predictions"]) == 2   # still serving


class Wider(Ranker):
    """The ranker with one more dense input: a module of other inputs."""

    def __init__(self, session):
        super().__init__(session)
        self.mlp[0] = torch.nn.Linear(6 + 4 + 3 + 3 + 2, 8)


@pytest.mark.parametrize("push", [False, True], ids=["from its folder", "as messages"])
def test_a_served_model_follows_the_trainers_syncs(session, tmp_path, serving, push):
    rng = np.random.default_rng(3)
    model = trained(session, rng)
    example = batch(rng, 4)
    dt.export(model, tmp_path / "exports" / "ranker", example)
    client = serving()
    inputs = batch(rng, 5)
    opt = torch.optim.SGD(model.mlp.parameters(), lr=0.1)
    served = []
    for step in range(1, 5):
        model.train()
        model(*batch(rng, 6)).sum().backward()        # the rows and the dense weights move
        opt.step()
        checkpoint = dt.write_sync(model, tmp_path / "sync", example, step=step, full_every=2)
        follow = client.push_sync if push else client.sync
        answer = follow("ranker", tmp_path / "sync")["sync"]
        assert (answer["checkpoint"], answer["step"], answer["dense_step"]) == \
            (checkpoint, step, step)
        model.eval()
        with torch.no_grad():
            want = model(*inputs).numpy()
        served.append(client.predict("ranker", instances_of(*inputs))["predictions"])
        np.testing.assert_allclose(served[-1], want, rtol=1e-5, atol=1e-5,
                                   err_msg=f"step {step}")
    assert served[0] != served[-1]
    assert client.model("ranker")["sync"]["step"] == 4
    if push:  # nothing new: nothing sent, the sync held named
        assert client.push_sync("ranker", tmp_path / "sync")["sync"]["checkpoint"] == checkpoint
    other = Wider(session)
    wide = (torch.ones(4, 6),) + example[1:]
    dt.write_sync(other, tmp_path / "wide", wide, step=9)
    with pytest.raises(darcy.InvalidArgument, match="other inputs"):
        follow("ranker", tmp_path / "wide")
    np.testing.assert_allclose(client.predict("ranker", instances_of(*inputs))["predictions"],
                               served[-1], rtol=1e-6)


def test_darcy_serve_looks_the_rows_up_on_cluster_shards(session, tmp_path):
    rng = np.random.default_rng(11)
    model = trained(session, rng)
    dt.export(model, tmp_path / "exports" / "ranker", batch(rng, 4))
    model.eval()
    inputs = batch(rng, 6)
    with torch.no_grad():
        want = model(*inputs).numpy()
    with darcy.LocalCluster(nodes=2, name_prefix="tx") as cluster:
        args = ["--cluster", cluster.seed, "--embedding-shards", "1"]
        with darcy.serving.LocalServer(tmp_path / "exports", args, binary=DARCY) as server:
            assert server.client.model("ranker")["embeddings"] == "shards"
            answer = server.client.predict("ranker", instances_of(*inputs))
    np.testing.assert_allclose(answer["predictions"], want, rtol=1e-5, atol=1e-5)
