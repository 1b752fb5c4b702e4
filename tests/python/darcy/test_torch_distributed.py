# darcy.torch under torch.distributed: trainer processes (gloo) whose dense parts are
# DistributedDataParallel and whose one table a node hosts reach, two of them on halves of the
# stream, the test AUC of one process that trains on all of it.
import json
import os
import pathlib
import subprocess
import sys

import darcy


def train(cluster, service, world, rendezvous):
    """Starts `world` trainer ranks over `service`; rank 0's JSON line."""
    script = pathlib.Path(__file__).with_name("ddp_trainer.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    ranks = [subprocess.Popen([sys.executable, str(script), cluster.seed, service, str(rank),
                               str(world), str(rendezvous)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
             for rank in range(world)]
    outs = []
    try:
        for rank in ranks:
            out, err = rank.communicate(timeout=120)
            assert rank.returncode == 0, err
            outs.append(out)
    finally:  # a rank that failed leaves the others waiting in a collective
        for rank in ranks:
            rank.kill()
            rank.wait()
    return json.loads(outs[0].strip().splitlines()[-1])


def test_two_gloo_ranks_over_one_hosted_table_reach_the_one_process_auc(tmp_path):
    with darcy.LocalCluster(nodes=1, name_prefix="ddp") as cluster:
        cluster.host_embeddings("one.embeddings", shards=1)
        cluster.host_embeddings("two.embeddings", shards=1)
        one = train(cluster, "one.embeddings", 1, tmp_path / "one.rendezvous")
        two = train(cluster, "two.embeddings", 2, tmp_path / "two.rendezvous")
    assert one["steps"] == 2 * two["steps"]
    assert one["auc"] > 0.75, one                     # it learned the teacher
    assert abs(two["auc"] - one["auc"]) <= 0.005, (one, two)
