# Tests python/darcy/torch_state.py: a model's state_dict carries its tables (inline, or as a
# reference to a checkpoint in the session's checkpoint_dir), load_state_dict restores them, in
# the same session or a fresh one; the tables are saved and restored once however many Darcy
# modules share a session; outputs follow the module's device; bad states raise.
import io
import os

import numpy as np
import pytest
import torch

import darcy
import darcy.torch as dt

KEYS = np.arange(1, 9)
IDS = torch.from_numpy(KEYS.reshape(4, 2))
FEATURES = dt.KeyedJaggedTensor(["user"], torch.tensor([11, 12, 13]), torch.tensor([2, 1]))


def build(session):
    """A model with a bag, an embedding and a collection over tables of `session`."""
    torch.manual_seed(0)
    bag = session.embedding("ads", 4, optimizer=darcy.SGDRule(0.5))
    emb = session.embedding("words", 4, optimizer=darcy.AdagradRule(0.5))
    return torch.nn.ModuleDict({
        "bag": dt.DynamicEmbeddingBag(bag, mode="sum"),
        "emb": dt.DynamicEmbedding(emb),
        "ebc": dt.EmbeddingBagCollection(session, [
            dt.EmbeddingBagConfig("users", 4, ["user"], optimizer=darcy.SGDRule(0.5))]),
        "dense": torch.nn.Linear(4, 1)})


def step(model):
    model.train()
    out = model["dense"](model["bag"](IDS) + model["emb"](IDS).sum(1)).sum()
    (out + model["ebc"](FEATURES).values().sum()).backward()


def rows(session):
    return {name: session.tables[name].lookup(KEYS if name != "users" else np.arange(11, 14))
            for name in ("ads", "words", "users")}


def assert_rows_equal(got, want):
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def saved_bytes(model):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    return buffer


@pytest.mark.parametrize("checkpoint_dir", [False, True], ids=["inline", "reference"])
def test_load_state_dict_brings_back_rows_and_dense_weights_of_the_save(tmp_path, checkpoint_dir):
    where = tmp_path / "state" if checkpoint_dir else None
    with darcy.Session.local(shards=2, checkpoint_dir=where) as session:
        model = build(session)
        step(model)
        want, weight = rows(session), model["dense"].weight.detach().clone()
        saved = saved_bytes(model)
        state = model.state_dict()["bag._extra_state"]
        assert ("files" in state) != checkpoint_dir
        assert state["tables"] == ["ads", "users", "words"]
        step(model)
        with torch.no_grad():
            model["dense"].weight.add_(1.0)
        changed = rows(session)
        assert not np.array_equal(changed["ads"], want["ads"])
        model.load_state_dict(torch.load(saved))
        assert_rows_equal(rows(session), want)
        assert torch.equal(model["dense"].weight, weight)
        step(model)  # the tables train on from the restored rows
        assert not np.array_equal(rows(session)["ads"], want["ads"])


def test_a_state_dict_fills_the_tables_of_a_fresh_session_with_other_shards():
    with darcy.Session.local(shards=2) as session:
        model = build(session)
        step(model)
        want = rows(session)
        saved = saved_bytes(model)
    with darcy.Session.local(shards=3) as fresh:
        again = build(fresh)
        again.load_state_dict(torch.load(saved))
        assert_rows_equal(rows(fresh), want)


def counting(session, monkeypatch, method):
    calls = []
    original = getattr(session, method)

    def counted(*args):
        calls.append(args)
        return original(*args)
    monkeypatch.setattr(session, method, counted)
    return calls


def test_modules_of_one_session_save_once_until_something_is_written(session, monkeypatch):
    model = build(session)
    saves = counting(session, monkeypatch, "save")
    first = model.state_dict()
    assert len(saves) == 1                      # three Darcy modules, one save
    assert model.state_dict()["bag._extra_state"] is first["emb._extra_state"]
    assert len(saves) == 1                      # nothing written since
    step(model)
    model.state_dict()
    assert len(saves) == 2


def test_load_state_dict_restores_once_for_every_module_of_a_session(session, monkeypatch):
    model = build(session)
    step(model)
    saved = saved_bytes(model)
    restores = counting(session, monkeypatch, "restore")
    model.load_state_dict(torch.load(saved))
    assert len(restores) == 1


def test_a_reference_to_a_checkpoint_its_directory_no_longer_holds_raises_not_found(tmp_path):
    with darcy.Session.local(shards=2, checkpoint_dir=tmp_path / "state") as session:
        model = build(session)
        step(model)
        old = saved_bytes(model)
        step(model)
        model.state_dict()                      # a newer save there: the older one goes
        with pytest.raises(darcy.NotFound, match="no longer holds checkpoint"):
            model.load_state_dict(torch.load(old))


def test_a_state_dict_of_a_checkpoint_saved_beside_it_needs_load_checkpoint(session, tmp_path):
    model = build(session)
    step(model)
    dt.save_checkpoint(model, tmp_path / "ckpt", step=4)
    state = torch.load(tmp_path / "ckpt" / "module.pt")
    assert "files" not in state["bag._extra_state"]
    with pytest.raises(darcy.InvalidArgument, match="load_checkpoint"):
        model.load_state_dict(state)
    step(model)
    assert dt.load_checkpoint(model, tmp_path / "ckpt") == 4


def test_a_state_dict_without_tables_loads_its_dense_weights_with_a_warning(session):
    model = build(session)
    state = {k: v for k, v in model.state_dict().items() if not k.endswith("_extra_state")}
    with torch.no_grad():
        state["dense.weight"] = state["dense.weight"] + 1.0
    with pytest.warns(UserWarning, match="holds no tables"):
        model.load_state_dict(state)
    assert torch.equal(model["dense"].weight, state["dense.weight"])


BAD_STATES = [
    ("not a dict", "rows", "not a darcy.tables state"),
    ("another format", {"format": "other", "version": 1}, "not a darcy.tables state"),
    ("a later version", {"format": "darcy.tables", "version": 9}, "version 9"),
    ("a file outside", {"format": "darcy.tables", "version": 1, "checkpoint": "x",
                        "files": {"../escape": b"x"}}, "outside its checkpoint"),
    ("an absolute file", {"format": "darcy.tables", "version": 1, "checkpoint": "x",
                          "files": {"/tmp/escape": b"x"}}, "outside its checkpoint"),
]


@pytest.mark.parametrize("what, state, message", BAD_STATES, ids=[c[0] for c in BAD_STATES])
def test_a_bad_state_raises_invalid_argument_and_leaves_the_rows(session, what, state, message):
    model = build(session)
    step(model)
    want = rows(session)
    with pytest.raises(darcy.InvalidArgument, match=message):
        model["bag"].set_extra_state(state)
    assert_rows_equal(rows(session), want)
    assert not os.path.exists("/tmp/escape")


def test_damaged_inline_files_raise_corrupt_file(session):
    model = build(session)
    step(model)
    state = dict(model.state_dict()["bag._extra_state"])
    state["checkpoint"] = "another"
    state["files"] = {name: data[:len(data) // 2] for name, data in state["files"].items()}
    with pytest.raises(darcy.CorruptFile):
        model["bag"].set_extra_state(state)


def test_outputs_follow_the_device_given_and_model_to():
    with darcy.Session.local(shards=1) as session:
        model = build(session)
        assert model["bag"].device == torch.device("cpu")
        model.eval()
        model.to("meta")                        # a device every build has
        assert model["bag"](IDS).device.type == "meta"
        assert model["emb"](IDS).device.type == "meta"
        assert model["ebc"](FEATURES).values().device.type == "meta"
        placed = dt.DynamicEmbedding(session.tables["words"], device="meta")
        assert placed(IDS).device.type == "meta"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_cuda_outputs_and_gradients_cross_to_the_shards(session):
    model = build(session).cuda()
    before = rows(session)
    out = model["bag"](IDS.cuda())
    assert out.device.type == "cuda"
    out.sum().backward()
    assert not np.array_equal(rows(session)["ads"], before["ads"])


def test_old_names_of_rules_and_checkpoint_calls_still_work_with_a_warning():
    with pytest.warns(DeprecationWarning, match="darcy.SGDRule"):
        assert darcy.SGD is darcy.SGDRule
    with pytest.warns(DeprecationWarning, match="save_checkpoint"):
        assert dt.save is dt.save_checkpoint
    with pytest.raises(AttributeError):
        darcy.NoSuchRule
