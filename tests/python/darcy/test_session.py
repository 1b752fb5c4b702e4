# Tests python/darcy/session.py and the extension under it: lookups, the shards' optimizers
# against NumPy references, keys of every kind, errors, checkpoints, top-k and stats.
import numpy as np
import pytest

import darcy

DIM = 4


def reference_step(kind, opt, w, slots, g, t):
    """One update of a row as compute/optimizer.cpp applies it; t is the row's update count."""
    if kind == "sgd":
        return w - opt.learning_rate * g
    if kind == "adagrad":
        slots[0] += g * g
        return w - opt.learning_rate * g / np.sqrt(slots[0])
    if kind == "momentum":
        slots[0] = opt.momentum * slots[0] + g
        step = g + opt.momentum * slots[0] if opt.nesterov else slots[0]
        return w - opt.learning_rate * step
    if kind == "adam":
        slots[0] = opt.beta1 * slots[0] + (1 - opt.beta1) * g
        slots[1] = opt.beta2 * slots[1] + (1 - opt.beta2) * g * g
        rate = opt.learning_rate * np.sqrt(1 - opt.beta2 ** t) / (1 - opt.beta1 ** t)
        return w - rate * slots[0] / (np.sqrt(slots[1]) + opt.epsilon)
    if kind == "ftrl":
        acc_new = slots[0] + g * g
        sigma = (np.sqrt(acc_new) - np.sqrt(slots[0])) / opt.learning_rate
        slots[1] += g - sigma * w
        quadratic = np.sqrt(acc_new) / opt.learning_rate + 2 * opt.l2
        slots[0] = acc_new
        return np.where(np.abs(slots[1]) > opt.l1,
                        (np.copysign(opt.l1, slots[1]) - slots[1]) / quadratic, 0.0)
    raise AssertionError(kind)


def initial_slots(kind, opt):
    if kind in ("adagrad", "ftrl"):
        return [np.full(DIM, opt.initial_accumulator), np.zeros(DIM)]
    return [np.zeros(DIM), np.zeros(DIM)]


@pytest.mark.parametrize("opt", [
    darcy.SGDRule(0.1),
    darcy.AdagradRule(0.05, initial_accumulator=0.1),
    darcy.MomentumRule(0.05, momentum=0.9),
    darcy.MomentumRule(0.05, momentum=0.9, nesterov=True),
    darcy.AdamRule(0.01),
    darcy.FtrlRule(0.05, l1=0.001, l2=0.01),
], ids=lambda o: repr(o))
def test_optimizers_match_numpy_references(session, rng, opt):
    table = session.embedding("t", DIM, optimizer=opt)
    vocab = [f"k{i}" for i in range(6)]
    rows = {k: r.astype(np.float64) for k, r in zip(vocab, table.lookup(vocab))}
    slots = {k: initial_slots(opt.kind, opt) for k in vocab}
    updates = {k: 0 for k in vocab}
    for step in range(1, 9):
        # Repeats, and keys left out of some steps (lazy Adam counts each row's own updates).
        keys = list(rng.choice(vocab[: 3 + step % 3], size=7))
        grads = rng.normal(size=(len(keys), DIM)).astype(np.float32)
        table.apply_gradients(keys, grads, step=step)
        for k in set(keys):
            g = grads[[i for i, key in enumerate(keys) if key == k]].astype(np.float64).sum(0)
            updates[k] += 1
            rows[k] = reference_step(opt.kind, opt, rows[k], slots[k], g, updates[k])
    got = table.lookup(vocab)
    want = np.stack([rows[k] for k in vocab])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_rows_come_in_key_order_with_repeats(session):
    table = session.embedding("t", DIM)
    once = table.lookup(["a", "b", "c"])
    again = table.lookup(["c", "a", "c", "b"])
    assert again.shape == (4, DIM) and again.dtype == np.float32
    np.testing.assert_array_equal(again, once[[2, 0, 2, 1]])


@pytest.mark.parametrize("ids,text", [
    (np.array([7, 12], dtype=np.int64), ["7", "12"]),
    (np.array([7, 12], dtype=np.uint64), ["7", "12"]),
    (np.array([7, 12], dtype=np.int32), ["7", "12"]),
    (np.array([2**63 + 5], dtype=np.uint64), [str(2**63 + 5)]),
])
def test_integer_ids_are_the_keys_of_their_decimal_digits(session, ids, text):
    table = session.embedding("t", DIM)
    np.testing.assert_array_equal(table.lookup(ids), table.lookup(text))


def test_bytes_and_str_of_the_same_utf8_are_one_key(session):
    table = session.embedding("t", DIM)
    np.testing.assert_array_equal(table.lookup([b"caf\xc3\xa9"]), table.lookup(["café"]))


def test_lookup_for_backward_gives_distinct_rows_and_applies_once(session):
    table = session.embedding("t", DIM, optimizer=darcy.SGDRule(1.0))
    rows, inverse, pending = table.lookup_for_backward(["x", "y", "x"])
    assert rows.shape == (2, DIM)
    np.testing.assert_array_equal(inverse, [0, 1, 0])
    pending.backward(np.ones((2, DIM), dtype=np.float32))
    np.testing.assert_allclose(table.lookup(["x", "y"]), rows - 1.0, rtol=1e-6)
    with pytest.raises(darcy.NotFound):
        pending.backward(np.ones((2, DIM), dtype=np.float32))


BAD_CALLS = [
    ("keys are ints in a list", lambda t: t.lookup([1, 2]), darcy.InvalidArgument),
    ("keys are one str", lambda t: t.lookup("abc"), darcy.InvalidArgument),
    ("keys are floats", lambda t: t.lookup(np.array([1.5])), darcy.InvalidArgument),
    ("keys are a 2-D array", lambda t: t.lookup(np.ones((2, 2), dtype=np.int64)),
     darcy.InvalidArgument),
    ("a negative id", lambda t: t.lookup(np.array([3, -1])), darcy.InvalidArgument),
    ("no key", lambda t: t.lookup([]), darcy.EmptyBatch),
    ("keys are a dict", lambda t: t.lookup({"a": 1}), darcy.InvalidArgument),
    ("more keys than max_batch", lambda t: t.lookup([f"k{i}" for i in range(9)]),
     darcy.BatchTooLarge),
    ("float64 gradients", lambda t: t.apply_gradients(["a"], np.ones((1, DIM))),
     darcy.InvalidArgument),
    ("gradients as a list", lambda t: t.apply_gradients(["a"], [[1.0] * DIM]),
     darcy.InvalidArgument),
    ("gradients of another dim", lambda t: t.apply_gradients(
        ["a"], np.ones((1, DIM + 1), dtype=np.float32)), darcy.DimensionMismatch),
    ("a gradient row short", lambda t: t.apply_gradients(
        ["a", "b"], np.ones((1, DIM), dtype=np.float32)), darcy.DimensionMismatch),
    ("a NaN gradient", lambda t: t.apply_gradients(
        ["a", "new"], np.array([[0, 0, 0, 0], [0, np.nan, 0, 0]], dtype=np.float32)),
     darcy.NonFinite),
    ("an infinite gradient", lambda t: t.apply_gradients(
        ["a"], np.full((1, DIM), np.inf, dtype=np.float32)), darcy.NonFinite),
    ("a NaN backward", lambda t: t.lookup_for_backward(["a"])[2].backward(
        np.full((1, DIM), np.nan, dtype=np.float32)), darcy.NonFinite),
    ("top-k of another dim", lambda t: t.top_k(np.ones((1, 3), dtype=np.float32), 2),
     darcy.DimensionMismatch),
    ("top-k with an unknown metric", lambda t: t.top_k(
        np.ones((1, DIM), dtype=np.float32), 2, "l7"), darcy.InvalidArgument),
    ("approximate top-k without an index", lambda t: t.top_k(
        np.ones((1, DIM), dtype=np.float32), 2, approximate=True), darcy.InvalidConfig),
    ("a negative step", lambda t: t.apply_gradients(
        ["a"], np.ones((1, DIM), dtype=np.float32), step=-2), darcy.InvalidArgument),
]


@pytest.mark.parametrize("what,call,error", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_its_error_and_changes_no_row(session, what, call, error):
    table = session.embedding("t", DIM, optimizer=darcy.SGDRule(0.5), max_batch=8)
    before = table.lookup(["a", "b"])
    rows_before = table.stats()["rows"]
    with pytest.raises(error) as raised:
        call(table)
    assert isinstance(raised.value, darcy.Error)
    assert str(raised.value)  # Darcy's one-line message
    np.testing.assert_array_equal(table.lookup(["a", "b"]), before)
    assert table.stats()["rows"] == rows_before


def test_errors_are_darcy_errors_and_builtin_ones():
    assert issubclass(darcy.DimensionMismatch, darcy.Error)
    assert issubclass(darcy.DimensionMismatch, ValueError)
    assert issubclass(darcy.UnknownEmbedding, LookupError)
    assert issubclass(darcy.Timeout, TimeoutError)
    assert darcy.NonFinite.code == "non_finite"


@pytest.mark.parametrize("settings,error", [
    (dict(optimizer="adam"), darcy.InvalidArgument),
    (dict(optimizer=darcy.AdamRule(learning_rate=-1.0)), darcy.InvalidConfig),
    (dict(initializer=darcy.AdamRule()), darcy.InvalidArgument),
    (dict(store="tape:/dev/st0"), darcy.InvalidArgument),
])
def test_bad_table_settings_raise(session, settings, error):
    with pytest.raises(error):
        session.embedding("t", DIM, **settings)


def test_the_same_name_gives_the_same_table_or_refuses_other_settings(session):
    table = session.embedding("t", DIM)
    assert session.embedding("t", DIM) is table
    with pytest.raises(darcy.InvalidConfig):
        session.embedding("t", DIM + 1)


def test_a_closed_session_raises_unavailable():
    s = darcy.Session.local(shards=1)
    table = s.embedding("t", DIM)
    s.close()
    assert s.closed
    with pytest.raises(darcy.Unavailable):
        table.lookup(["a"])
    s.close()  # twice is fine


def test_a_checkpoint_restores_rows_onto_another_shard_count(tmp_path):
    with darcy.Session.local(shards=3) as s:
        table = s.embedding("t", DIM, optimizer=darcy.SGDRule(0.1))
        keys = [f"k{i}" for i in range(50)]
        table.apply_gradients(keys, np.ones((50, DIM), dtype=np.float32))
        saved = table.lookup(keys)
        s.save(tmp_path / "ckpt", step=17)
        table.apply_gradients(keys, np.ones((50, DIM), dtype=np.float32))
    with darcy.Session.local(shards=2) as s:
        table = s.embedding("t", DIM, optimizer=darcy.SGDRule(0.1))
        assert s.restore(tmp_path / "ckpt") == 17
        np.testing.assert_array_equal(table.lookup(keys), saved)
        assert table.stats()["rows"] == 50


def test_incremental_saves_restore_the_newest_state_of_their_chain(tmp_path):
    keys = [f"k{i}" for i in range(50)]
    with darcy.Session.local(shards=3) as s:
        table = s.embedding("t", DIM, optimizer=darcy.SGDRule(0.1))
        for step in range(4):
            table.apply_gradients(keys[step * 10:step * 10 + 20],
                                  np.ones((20, DIM), dtype=np.float32))
            s.save(tmp_path / "ckpt", step=step, full_every=3)
        saved = table.lookup(keys)
    chain = sorted(p.name for p in (tmp_path / "ckpt").iterdir() if p.is_dir())
    assert len(chain) == 4, "a full checkpoint and 3 deltas"
    with darcy.Session.local(shards=2) as s:
        table = s.embedding("t", DIM, optimizer=darcy.SGDRule(0.1))
        assert s.restore(tmp_path / "ckpt") == 3
        np.testing.assert_array_equal(table.lookup(keys), saved)


def test_top_k_finds_the_row_nearest_the_query(session):
    table = session.embedding("t", DIM, optimizer=darcy.SGDRule(1.0), initializer=darcy.Zeros())
    keys = ["north", "east", "south"]
    table.apply_gradients(keys, -np.array([[1, 0, 0, 0], [0, 1, 0, 0], [-1, 0, 0, 0]],
                                          dtype=np.float32))
    hits = table.top_k(np.array([[0.9, 0.1, 0, 0]], dtype=np.float32), 2, "cosine")
    assert [key for key, _ in hits[0]] == ["north", "east"]
    assert hits[0][0][1] == pytest.approx(0.9 / np.hypot(0.9, 0.1), rel=1e-5)


def test_approximate_top_k_reading_every_list_answers_the_exact_top_k(session):
    table = session.embedding("items", DIM, ann=darcy.AnnIndex(probes=4, rerank=20))
    keys = [f"item-{i}" for i in range(2000)]
    table.lookup(keys)
    queries = np.random.default_rng(3).normal(size=(3, DIM)).astype(np.float32)
    exact = table.top_k(queries, 5)
    whole = table.top_k(queries, 5, approximate=True, probes=100000, rerank=100000,
                        max_staleness_ms=0)
    assert [[key for key, _ in hits] for hits in whole] == \
        [[key for key, _ in hits] for hits in exact]
    assert table.stats()["ann_rows"] == 2000
    with pytest.raises(darcy.InvalidArgument):
        session.embedding("bad", DIM, ann=darcy.LRU(max_rows=3))


def test_stats_count_rows_and_frequency_admission_holds_rows_back(session):
    table = session.embedding("t", DIM, admission=darcy.Frequency(min_count=2))
    table.lookup(["once", "twice"])
    table.lookup(["twice"])
    assert table.stats()["rows"] == 1


def test_leveldb_store_keeps_rows_across_sessions(tmp_path):
    store = f"leveldb:{tmp_path}"
    with darcy.Session.local(shards=2, store=store) as s:
        table = s.embedding("t", DIM)
        first = table.lookup(["persisted"])
        s.save(tmp_path / "ckpt")
    with darcy.Session.local(shards=2, store=store) as s:
        table = s.embedding("t", DIM)
        s.restore(tmp_path / "ckpt")
        np.testing.assert_array_equal(table.lookup(["persisted"]), first)
