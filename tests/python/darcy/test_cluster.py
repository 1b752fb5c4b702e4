# Tests python/darcy/cluster.py: node processes from Python, a table on them, and faults.
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import darcy
import darcy.torch as dt


def wait_for(predicate, what, timeout=20.0):
    """Polls `predicate` until it holds; fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def state_of(cluster, name):
    for member in cluster.status()["members"]:
        if member["name"] == name:
            return member["state"]
    return None


def test_members_come_up_and_a_killed_one_goes_down():
    with darcy.LocalCluster(nodes=3, name_prefix="py") as cluster:
        assert cluster.names == ["py-0", "py-1", "py-2"]
        assert [m["state"] for m in cluster.status()["members"]] == ["up"] * 3
        cluster.kill("py-2")
        wait_for(lambda: state_of(cluster, "py-2") == "down", "py-2 down")
        with pytest.raises(darcy.UnknownNode):
            cluster.kill("py-9")


def test_a_table_on_node_processes_trains_through_dropped_messages():
    with darcy.LocalCluster(nodes=2, name_prefix="drop") as cluster:
        with cluster.session(shards=1, timeout_ms=3000) as session:
            table = session.embedding("t", 4, optimizer=darcy.SGDRule(0.1))
            keys = [f"k{i}" for i in range(64)]
            start = table.lookup(keys)
            cluster.disrupt_node("drop-1", drop=0.05, seed=3)
            for _ in range(20):
                table.apply_gradients(keys, np.ones((64, 4), dtype=np.float32))
            counts = cluster.heal_node("drop-1")
            assert counts["dropped"] > 0
            assert table.stats()["retried_requests"] > 0
            np.testing.assert_allclose(table.lookup(keys), start - 2.0, rtol=1e-5)


def test_a_closed_cluster_raises_unavailable():
    cluster = darcy.LocalCluster(nodes=1, name_prefix="closed")
    cluster.close()
    with pytest.raises(darcy.Unavailable):
        cluster.status()


def restore_when_back(model, ckpt, attempts=120):
    """darcy.torch.load_checkpoint once the lost shard is placed again (its supervisor's work)."""
    for _ in range(attempts):
        try:
            return dt.load_checkpoint(model, ckpt)
        except darcy.Error:
            time.sleep(0.25)
    pytest.fail("the lost shard never came back")


def test_a_shard_node_killed_while_a_pytorch_loop_trains_is_restored_and_the_loop_finishes(
        tmp_path):
    ckpt = tmp_path / "ckpt"
    with darcy.LocalCluster(nodes=3, name_prefix="sup") as cluster:
        with cluster.session(shards=1, timeout_ms=2000, checkpoint_dir=ckpt / "tables") as s:
            table = s.embedding("t", 4, optimizer=darcy.SGDRule(0.05))
            model = torch.nn.Sequential(dt.DynamicEmbeddingBag(table, mode="sum"),
                                        torch.nn.Linear(4, 1))
            opt = torch.optim.SGD(model[1].parameters(), lr=0.05)
            keys = torch.arange(64).reshape(16, 4)
            target = torch.linspace(-1, 1, 16)
            step, recoveries, killed = 0, 0, False
            dt.save_checkpoint(model, ckpt, step=0)
            while step < 40:
                try:
                    loss = ((model(keys).squeeze(1) - target) ** 2).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    step += 1
                    if step % 10 == 0:
                        dt.save_checkpoint(model, ckpt, step=step)
                    if step == 15 and not killed:
                        cluster.kill("sup-2")
                        killed = True
                except darcy.Error:
                    recoveries += 1
                    assert recoveries < 20, "the loop keeps failing"
                    step = restore_when_back(model, ckpt)
            assert killed and step == 40
            assert recoveries >= 1
            assert table.stats()["recovered_shards"] >= 1
            assert np.isfinite(table.lookup(np.arange(64))).all()


def start_trainer(cluster, worker, steps, state, stop_at=0):
    script = pathlib.Path(__file__).with_name("shared_trainer.py")
    args = [sys.executable, str(script), cluster.seed, "shared.embeddings", str(worker),
            str(steps), str(state)]
    if stop_at:
        args += ["--stop-at", str(stop_at)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


def finished(trainer):
    out, err = trainer.communicate(timeout=120)
    assert trainer.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_trainer_processes_share_one_hosted_table_and_a_killed_one_goes_on(tmp_path):
    with darcy.LocalCluster(nodes=2, name_prefix="dp") as cluster:
        host = cluster.host_embeddings("shared.embeddings", shards=1)
        assert host == "dp-2"
        first = start_trainer(cluster, 0, 120, tmp_path / "w0", stop_at=40)
        second = start_trainer(cluster, 1, 120, tmp_path / "w1")
        # The first trainer stops itself once step 40 is saved: a kill at a known step.
        _, status = os.waitpid(first.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)
        first.kill()
        first.wait()
        again = finished(start_trainer(cluster, 0, 120, tmp_path / "w0"))
        assert again == {"worker": 0, "resumed": 40, "step": 120}
        assert finished(second) == {"worker": 1, "resumed": 0, "step": 120}

        with cluster.session(service="shared.embeddings") as session:
            with pytest.raises(darcy.InvalidConfig):
                session.embedding("shared", 8)
            table = session.embedding("shared", 4, optimizer=darcy.SGDRule(0.02),
                                      initializer=darcy.Zeros())
            assert table.stats()["rows"] == 400, "both trainers wrote the one table"
            keys = np.random.default_rng(99).integers(0, 400, size=(256, 4))
            served = table.lookup(keys.reshape(-1)).sum(1).reshape(256, 4).sum(1)
            teacher = np.where(keys % 3 == 0, 0.5, -0.5).sum(1)
            assert np.mean((served - teacher) ** 2) < 0.01 * np.mean(teacher ** 2)
        with pytest.raises(darcy.UnknownService):
            cluster.session(service="nobody.hosts.this")
        with pytest.raises(darcy.InvalidArgument):
            cluster.session(service="shared.embeddings", checkpoint_dir=tmp_path)
