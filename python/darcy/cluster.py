"""darcy.LocalCluster: real `darcy node` processes on 127.0.0.1 for tests and experiments,
with the fault injection of Darcy's C++ test kit: kill, pause, resume, restart, new members,
dropped and delayed messages, and a read of the registry."""

import os
import pathlib
import shutil
import time

from darcy import _darcy
from darcy.session import Session


def _binary(given):
    """The `darcy` binary: `given`, $DARCY_BINARY, the one installed with this package (pip),
    the build this package sits in (build/python), or PATH."""
    if given:
        return os.fspath(given)
    if os.environ.get("DARCY_BINARY"):
        return os.environ["DARCY_BINARY"]
    here = pathlib.Path(__file__).resolve().parent
    for built in (here / "bin" / "darcy", here.parents[1] / "apps" / "darcy"):
        if built.exists():
            return str(built)
    found = shutil.which("darcy")
    if not found:
        raise _darcy.InvalidConfig("invalid configuration: no darcy binary (pass binary= or "
                                   "set DARCY_BINARY)")
    return found


class LocalCluster:
    """`nodes` node processes, the first the seed, killed when the cluster closes. Nodes are
    named NAME_PREFIX-0, -1, ...; methods take a node's name or index. With chaos (the
    default), disrupt() can drop and delay messages. Each node loads the rule plugins listed in
    `plugins` (`darcy node --plugin`), so that tables may name their rules (darcy.Rule)."""

    def __init__(self, nodes=3, binary=None, chaos=True, secret_file=None, tls_dir=None,
                 name_prefix="node", plugins=()):
        self._handle = _darcy._LocalCluster(nodes, _binary(binary), chaos, secret_file or "",
                                            tls_dir or "", name_prefix,
                                            [os.fspath(p) for p in plugins])
        self._secret_file = secret_file
        self._tls_dir = tls_dir

    @property
    def seed(self):
        """HOST:PORT of the seed."""
        return self._handle.seed

    @property
    def names(self):
        return self._handle.names

    def session(self, shards=1, timeout_ms=5000, checkpoint_dir=None, service=None):
        """A client session of this cluster whose tables get `shards` shards a node
        (supervised with a checkpoint_dir), or that uses the service a node hosts
        (Session.connect)."""
        return Session.connect(self.seed, self._secret_file, self._tls_dir, timeout_ms, shards,
                               checkpoint_dir, service)

    def host_embeddings(self, service, shards=1, nodes=None, checkpoint_dir=None,
                        timeout_ms=5000, name=""):
        """Starts a new member that hosts an embedding service's master under `service`
        (`darcy node --embedding-service`), with `shards` shards on each of `nodes` (names
        or indices; default: every member up now, the new one included), supervised when a
        checkpoint_dir is given. Returns once the registry lists the service, with the
        host's name; sessions from session(service=...) then share its tables."""
        args = ["--embedding-service", service, "--embedding-shards", str(shards),
                "--embedding-timeout-ms", str(timeout_ms)]
        if nodes:
            args += ["--embedding-nodes", ",".join(self._name(n) for n in nodes)]
        if checkpoint_dir:
            args += ["--embedding-checkpoint-dir", os.fspath(checkpoint_dir)]
        host = self._handle.add_node(name, args)
        deadline = time.monotonic() + 30
        while not any(s["name"] == service for s in self.status()["services"]):
            if time.monotonic() > deadline:
                raise _darcy.Timeout(f"deadline exceeded: node {host} did not publish "
                                     f"embedding service '{service}' within 30 s")
            time.sleep(0.05)
        return host

    def kill(self, node):
        """SIGKILL."""
        self._handle.kill(node)

    def pause(self, node):
        """SIGSTOP: the node keeps its connections but misses its heartbeats."""
        self._handle.pause(node)

    def resume(self, node):
        """SIGCONT."""
        self._handle.resume(node)

    def stop(self, node):
        """SIGTERM: the member leaves the cluster."""
        self._handle.stop(node)

    def restart(self, node):
        """Starts a killed or stopped node again under its name and address."""
        self._handle.restart(node)

    def add_node(self, name=""):
        """Starts a new member (a replacement after a kill); returns its name."""
        return self._handle.add_node(name, [])

    def disrupt(self, service, drop=0.0, delay=0.0, delay_ms=0, seed=1):
        """Drops `drop` and delays `delay` (by delay_ms) of the messages sent to `service`,
        seeded, until heal(service)."""
        return self._handle.disrupt(service, False, drop, delay, delay_ms, seed)

    def disrupt_node(self, node, drop=0.0, delay=0.0, delay_ms=0, seed=1):
        """The same for every actor node `node` hosts, now and later, until heal_node."""
        return self._handle.disrupt(self._name(node), True, drop, delay, delay_ms, seed)

    def heal(self, service):
        """Ends a disruption; answers its counts (forwarded, dropped, delayed)."""
        return self._handle.heal(service, False)

    def heal_node(self, node):
        return self._handle.heal(self._name(node), True)

    def status(self):
        """The registry's view: seed, members (name, host, port, pid, state, reason) and
        services (name, node)."""
        return self._handle.status()

    def close(self):
        """SIGKILLs every node."""
        self._handle.close()

    def _name(self, node):
        return self.names[node] if isinstance(node, int) else node

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
