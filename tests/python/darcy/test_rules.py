# Tests darcy.Rule and darcy.load_plugin: a table takes any update rule the shards know by
# name, a built-in or a plugin's, in process and on node processes; what no shard knows, or
# what a rule does not take, is refused by name.
import os

import numpy as np
import pytest

import darcy

PLUGIN = os.environ.get("DARCY_RULE_PLUGIN", "")
needs_plugin = pytest.mark.skipif(not PLUGIN, reason="DARCY_RULE_PLUGIN is not set (CTest sets it)")


def test_rowwise_adagrad_keeps_one_accumulator_a_row(session):
    table = session.embedding("rows", 4, optimizer=darcy.Rule("rowwise_adagrad",
                                                              learning_rate=0.1),
                              initializer=darcy.Zeros())
    keys = ["a", "b"]
    table.apply_gradients(keys, np.array([[1, -1, 2, 0], [0, 0, 0, 0]], dtype=np.float32))
    # The accumulator: 0 + (1 + 1 + 4) / 4 = 1.5; each value moves by
    # 0.1 * g / (sqrt(1.5) + 1e-8), and b's zero gradient moves nothing.
    rate = 0.1 / (np.sqrt(1.5) + 1e-8)
    np.testing.assert_allclose(table.lookup(keys)[0], [-rate, rate, -2 * rate, 0], rtol=1e-6)
    np.testing.assert_allclose(table.lookup(keys)[1], [0, 0, 0, 0])


@pytest.mark.parametrize("rule, error, says", [
    (darcy.Rule("rowwise_adagrad", learnin_rate=0.1), darcy.InvalidConfig, "'learnin_rate'"),
    (darcy.Rule("adagrad", learning_rate=-1.0), darcy.InvalidConfig, "learning_rate must be"),
    (darcy.Rule("no_such_rule"), darcy.UnknownRule, "'no_such_rule'"),
])
def test_a_rule_that_does_not_bind_is_refused_by_name(session, rule, error, says):
    with pytest.raises(error) as raised:
        session.embedding("bad", 4, optimizer=rule)
    assert says in str(raised.value)


@needs_plugin
def test_a_plugins_rule_trains_in_process_and_on_node_processes_that_load_it():
    assert darcy.load_plugin(PLUGIN) == ["frequency_sgd"]
    rule = darcy.Rule("frequency_sgd", learning_rate=0.5, warmup=1.0)
    with darcy.Session.local(shards=2) as local:
        table = local.embedding("freq", 2, optimizer=rule, initializer=darcy.Zeros())
        table.lookup(["k"])
        table.apply_gradients(["k"], np.array([[1.0, -2.0]], dtype=np.float32))
        # apply_gradients reads its rows as a training lookup does, so the update sees two
        # lookups: the rate is 0.5 / sqrt(1 + 2).
        rate = 0.5 / np.sqrt(3.0)
        np.testing.assert_allclose(table.lookup(["k"])[0], [-rate, 2 * rate], rtol=1e-6)
    with darcy.LocalCluster(nodes=3, name_prefix="rules", plugins=[PLUGIN]) as cluster:
        with cluster.session(shards=1) as session:
            table = session.embedding("freq", 2, optimizer=rule, initializer=darcy.Zeros())
            keys = [f"k{i}" for i in range(30)]
            table.lookup(keys)
            table.apply_gradients(keys, np.ones((30, 2), dtype=np.float32))
            np.testing.assert_allclose(table.lookup(keys), -rate, rtol=1e-6)


@needs_plugin
def test_nodes_without_the_plugin_refuse_its_rule_naming_the_node():
    with darcy.LocalCluster(nodes=1, name_prefix="bare") as cluster:
        with cluster.session(shards=1) as session:
            with pytest.raises(darcy.UnknownRule) as raised:
                session.embedding("freq", 2, optimizer=darcy.Rule("frequency_sgd"))
            assert "bare-0" in str(raised.value) and "frequency_sgd" in str(raised.value)


def test_a_plugin_path_that_is_no_plugin_raises(tmp_path):
    with pytest.raises(darcy.NotFound):
        darcy.load_plugin(tmp_path / "none.so")
    text = tmp_path / "text.so"
    text.write_text("not a library")
    with pytest.raises(darcy.IoError):
        darcy.load_plugin(text)
