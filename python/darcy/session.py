"""Sessions and tables: a session runs Darcy's dynamic embedding service in this process
(Session.local) or joins a cluster as its client (Session.connect); a table is one embedding of
it, whose shards apply gradients with the table's own optimizer."""

import os

from darcy import _darcy
from darcy import config as _config


class _Pending:
    """A pending lookup whose backward counts as a write of its session."""

    def __init__(self, pending, session):
        self._pending = pending
        self._session = session

    def backward(self, grads, step=None):
        result = self._pending.backward(grads, step)
        self._session._wrote()
        return result


class Table:
    """One dynamic embedding: raw keys (str, bytes, or a NumPy array of integer ids) to rows of
    `dim` float32 values, created on first sight as the table's admission and initializer
    allow. Made by Session.embedding."""

    def __init__(self, session, handle, settings):
        self._session = session
        self._handle = handle
        self._settings = settings

    @property
    def name(self):
        return self._handle.name

    @property
    def dim(self):
        return self._handle.dim

    @property
    def session(self):
        return self._session

    def lookup(self, keys):
        """The rows of `keys` in their order, a float32 array (len(keys), dim)."""
        return self._handle.lookup(keys)

    def apply_gradients(self, keys, grads, step=None):
        """Applies grads (float32, (len(keys), dim); rows of a repeated key are summed) with
        the table's optimizer. `step` is the global step (by default one past the last this
        table used). The rows are read as a training lookup reads them (counted in each row's
        lookup frequency). Bad keys or gradients raise before any row changes."""
        self._handle.apply_gradients(keys, grads, step)
        self._session._wrote()

    def prefetch(self, keys):
        """Hands `keys` over ahead of the lookup that will read them: a table on disk
        ("leveldb:DIR") brings their rows into its memory tier and keeps them there until that
        lookup. Creates no row and changes none; does nothing for a table in memory, or in a
        session on a cluster (not yet)."""
        self._handle.prefetch(keys)

    def lookup_for_backward(self, keys):
        """(rows of the distinct keys, int64 position of each key among them, a pending lookup
        whose backward(grads) sends the distinct rows' gradients). darcy.torch's modules use
        it; a pending lookup is spent by its first successful backward."""
        rows, inverse, pending = self._handle.lookup_for_backward(keys)
        return rows, inverse, _Pending(pending, self._session)

    def top_k(self, vectors, k, metric="dot", approximate=False, probes=0, rerank=0,
              max_staleness_ms=10000):
        """For each row of `vectors` (float32, (queries, dim)) the k best rows as
        (key, score) pairs, best first; metric "dot" or "cosine". approximate=True answers from
        the table's ANN index (a table made with ann=darcy.AnnIndex(), else
        darcy.InvalidConfig): `probes` lists and `rerank` candidates scored exactly (0: the
        table's), after indexing every change older than `max_staleness_ms` (0: all)."""
        return self._handle.top_k(vectors, k, metric, approximate, probes, rerank,
                                  max_staleness_ms)

    def sampled_logits(self, positive_keys, activations, num_sampled, seed=1, at_most=False):
        """Sampled-softmax logits for a batch: positive_keys[b] is example b's keys (a str or
        bytes key, a list of them, or a NumPy integer array), or positive_keys is an integer
        array (1-D: one id an example; 2-D: a row of ids an example); activations are float32
        (batch, dim). Columns are each example's positives, padded, then num_sampled negatives
        shared by the batch, drawn with replacement by the table's sampler (the `sampler` of
        Session.embedding), each logit a.w - log(n * Q(key)) for the n negatives drawn.
        num_sampled above the table's rows raises darcy.InvalidArgument, unless at_most: then
        a table that holds fewer rows (a growing label table) gives as many negatives as it
        has other rows. Returns (logits, labels, pending); pending.backward(dlogits) sends the
        rows' gradients and returns d(loss)/d(activations). darcy.torch.sampled_logits wraps
        it."""
        logits, labels, pending = self._handle.sampled_logits(positive_keys, activations,
                                                              num_sampled, seed, at_most)
        return logits, labels, _Pending(pending, self._session)

    def full_logits(self, positive_keys, activations, max_rows):
        """Full-softmax logits for a batch: the logit a.w of every row of the table for each
        example, computed on the shards that hold the rows. positive_keys and activations as
        for sampled_logits; a new positive gets its row first. Raises darcy.BatchTooLarge when
        the table holds more than max_rows rows. Returns (logits, labels, keys, pending):
        column c is the row of keys[c] (bytes), each example's positives share label 1, and
        pending.backward(dlogits) applies the rows' gradients on the shards and returns
        d(loss)/d(activations). darcy.torch.sampled_logits(..., full_logits_below=N) uses it
        while the table holds at most N rows."""
        logits, labels, keys, pending = self._handle.full_logits(positive_keys, activations,
                                                                 max_rows)
        return logits, labels, keys, _Pending(pending, self._session)

    def stats(self):
        """Rows, bytes and counters of the table across its shards, as a dict."""
        return self._handle.stats()

    def save(self, path, step=0, full_every=0):
        """One consistent checkpoint of every table of the session (Session.save)."""
        self._session.save(path, step, full_every)

    def restore(self, path):
        """Loads the checkpoint at `path` into every table of the session (Session.restore)."""
        return self._session.restore(path)

    def __repr__(self):
        return f"darcy.Table({self.name!r}, dim={self.dim})"


class Session:
    """Darcy's embedding service, from Python. Use as a context manager, or call close()."""

    def __init__(self, handle, checkpoint_dir=None):
        self._handle = handle
        self._tables = {}
        self._checkpoint_dir = os.fspath(checkpoint_dir) if checkpoint_dir else None
        # Writes made through this object (gradients, restores): a model's state dict saves
        # the tables again only when there were some (darcy.torch_state).
        self._writes = 0
        self._state_cache = None
        self._restored = None
        self._beside = None

    @staticmethod
    def local(shards=2, store="memory", timeout_ms=5000, checkpoint_dir=None):
        """The service in this process with `shards` shards. `store`: where tables keep
        their rows unless they say otherwise: "memory", "leveldb:DIR" or
        "redis://HOST:PORT". With checkpoint_dir, a model's state_dict() saves the tables
        there and names that checkpoint, instead of holding their rows."""
        return Session(_darcy._Session.local(shards, store, timeout_ms), checkpoint_dir)

    @staticmethod
    def connect(seed, secret_file=None, tls_dir=None, timeout_ms=5000, shards=1,
                checkpoint_dir=None, service=None):
        """A client of a running cluster: `seed` is HOST:PORT, or a cluster file or its
        directory (`darcy cluster up --dir DIR`). Tables get `shards` shards on every member.
        secret_file and tls_dir are the cluster's secret and TLS files (as the CLI's
        --secret-file and --tls-dir; DARCY_SECRET_FILE and DARCY_TLS_DIR by default). With
        checkpoint_dir (a folder every node can read), the shards are supervised from this
        process: a shard whose node dies starts again on another member, refilled from the
        newest checkpoint save() wrote there; meanwhile calls may raise darcy.Unavailable or
        darcy.Timeout, and a loop restores its last checkpoint and goes on.

        With `service`, the session starts no service of its own and uses the one a node
        hosts under that name (`darcy node --embedding-service NAME`, or
        LocalCluster.host_embeddings): every session naming it shares its tables, as
        asynchronous data-parallel trainer processes do, and the tables outlive any one of
        them. Its shards and their supervision are then the host's (shards is unused, and a
        checkpoint_dir raises darcy.InvalidArgument); darcy.UnknownService when no node hosts
        it. A model's state_dict() saves the tables into checkpoint_dir, when given, as with
        Session.local."""
        secret_file = secret_file or os.environ.get("DARCY_SECRET_FILE", "")
        tls_dir = tls_dir or os.environ.get("DARCY_TLS_DIR", "")
        return Session(_darcy._Session.connect(seed, secret_file, tls_dir, timeout_ms, shards,
                                               os.fspath(checkpoint_dir or ""), service or ""),
                       checkpoint_dir)

    def embedding(self, name, dim, optimizer=None, initializer=None, admission=None,
                  eviction=None, store=None, max_batch=1 << 16, cache_bytes=256 << 20,
                  sampler=None, ann=None):
        """The table `name` of `dim` values a row, created in the service on first use. The
        same name again gives the same table when the settings agree; other settings raise
        darcy.InvalidConfig."""
        settings = (dim, optimizer, initializer, admission, eviction, store, max_batch,
                    cache_bytes, sampler, ann)
        if name in self._tables:
            table = self._tables[name]
            if table._settings != settings:
                raise _darcy.InvalidConfig(
                    f"invalid configuration: table '{name}' exists with other settings")
            return table
        options = _darcy._TableOptions()
        options.name = name
        options.dim = dim
        options.optimizer = _config.as_dict(optimizer or _config.AdagradRule(), _config.OPTIMIZERS,
                                            "optimizer")
        options.initializer = _config.as_dict(initializer or _config.Uniform(),
                                              _config.INITIALIZERS, "initializer")
        options.admission = _config.as_dict(admission or _config.AdmitAll(), _config.ADMISSIONS,
                                            "admission")
        options.eviction = _config.as_dict(eviction or _config.KeepAll(), _config.EVICTIONS,
                                           "eviction")
        options.sampler = _config.as_dict(sampler or _config.UnigramSampler(), _config.SAMPLERS,
                                          "sampler")
        if ann is not None:
            options.ann = _config.as_dict(ann, _config.ANN_INDEXES, "ann")
        options.store = store or self._handle.store
        options.max_batch = max_batch
        options.cache_bytes = cache_bytes
        table = Table(self, _darcy._Table(self._handle, options), settings)
        self._tables[name] = table
        return table

    @property
    def tables(self):
        """The tables made through this session object, by name."""
        return dict(self._tables)

    def save(self, path, step=0, full_every=0):
        """One consistent checkpoint of every table of the service under `path`, with
        `step`; writes that arrive meanwhile wait. With full_every > 0 it is incremental:
        when the current checkpoint under `path` is this service's previous save there, only
        the rows changed since are written (a delta on it), and a full checkpoint after every
        full_every deltas; restore replays the chain, and older chains are removed whole."""
        self._handle.save(os.fspath(path), step, full_every)

    def restore(self, path):
        """Loads the checkpoint under `path` (whatever shard count wrote it) and returns the
        step saved with it."""
        step = self._handle.restore(os.fspath(path))
        self._wrote()
        return step

    def _restore_checkpoint(self, path, checkpoint):
        """Loads checkpoint `checkpoint` under `path`, making it the current one there when a
        later one is; darcy.NotFound when `path` no longer holds it."""
        self._handle.restore_checkpoint(os.fspath(path), checkpoint)
        self._wrote()

    def _wrote(self):
        self._writes += 1

    @property
    def checkpoint_dir(self):
        """Where a model's state_dict() saves the tables (None: into the state dict)."""
        return self._checkpoint_dir

    @property
    def in_process(self):
        return self._handle.in_process

    @property
    def closed(self):
        return self._handle.closed

    def close(self):
        """Stops the session once the calls in flight return; later calls raise
        darcy.Unavailable."""
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
