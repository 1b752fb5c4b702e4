"""TorchRec's collections over Darcy's tables: EmbeddingBagCollection pools each feature's rows
(sum or mean, optionally weighted) and EmbeddingCollection gives them unpooled, both from jagged
input in TorchRec's shape (KeyedJaggedTensor). Every table is looked up in one request, and
every table's gradients go back in one; features may share a table, as in TorchRec.

    ebc = darcy.torch.EmbeddingBagCollection(session, [
        darcy.torch.EmbeddingBagConfig("users", 16, ["user_id"]),
        darcy.torch.EmbeddingBagConfig("ads", 8, ["ad_id", "clicked_ads"], pooling="mean")])
    features = darcy.torch.KeyedJaggedTensor(["user_id", "ad_id", "clicked_ads"], values,
                                             lengths=lengths)  # feature-major, as TorchRec's
    pooled = ebc(features)          # a KeyedTensor: pooled["ad_id"] is (batch, 8)
"""

import dataclasses

import numpy as np
import torch

from darcy import _darcy
from darcy.torch_state import DarcyModule

__all__ = ["EmbeddingBagConfig", "EmbeddingConfig", "EmbeddingBagCollection",
           "EmbeddingCollection", "KeyedJaggedTensor", "KeyedTensor", "JaggedTensor"]


def _invalid(message):
    return _darcy.InvalidArgument("invalid argument: " + message)


@dataclasses.dataclass
class EmbeddingConfig:
    """A table of a collection and the features it serves; the other fields are the table's
    settings, as Session.embedding takes them."""
    name: str
    embedding_dim: int
    feature_names: list
    optimizer: object = None
    initializer: object = None
    admission: object = None
    eviction: object = None
    store: object = None


@dataclasses.dataclass
class EmbeddingBagConfig(EmbeddingConfig):
    """EmbeddingConfig with the pooling of each bag: "sum" or "mean"."""
    pooling: str = "sum"


class KeyedJaggedTensor:
    """Jagged input, as TorchRec's KeyedJaggedTensor holds it: for each feature (`keys`) in
    turn, each example's ids; `lengths` (len(keys) × batch, feature-major) or `offsets` (one
    more, from 0) say where each bag lies in `values`, with optional per-id `weights`."""

    def __init__(self, keys, values, lengths=None, offsets=None, weights=None):
        self._keys = list(keys)
        self._values = values
        if (lengths is None) == (offsets is None):
            raise _invalid("a KeyedJaggedTensor takes lengths or offsets, one of them")
        if lengths is None:
            offsets = _integers(offsets, "offsets")
            if offsets.numel() == 0 or offsets[0].item() != 0:
                raise _invalid("offsets start at 0, one more than the bags")
            lengths = offsets.diff()
        self._lengths = _integers(lengths, "lengths")
        self._weights = weights

    @classmethod
    def from_lengths_sync(cls, keys, values, lengths, weights=None):
        return cls(keys, values, lengths=lengths, weights=weights)

    @classmethod
    def from_offsets_sync(cls, keys, values, offsets, weights=None):
        return cls(keys, values, offsets=offsets, weights=weights)

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def lengths(self):
        return self._lengths

    def offsets(self):
        return _offsets(self._lengths)

    def weights_or_none(self):
        return self._weights


class KeyedTensor:
    """Pooled rows by feature, as TorchRec's KeyedTensor: values() is (batch, sum of the
    features' dims), the features side by side in keys() order."""

    def __init__(self, keys, length_per_key, values):
        self._keys = list(keys)
        self._length_per_key = list(length_per_key)
        self._values = values

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def length_per_key(self):
        return self._length_per_key

    def to_dict(self):
        return dict(zip(self._keys, self._values.split(self._length_per_key, dim=1)))

    def __getitem__(self, feature):
        return self.to_dict()[feature]


class JaggedTensor:
    """One feature's unpooled rows: values() is (ids, dim), each example's ids in turn, as
    lengths() says."""

    def __init__(self, values, lengths):
        self._values = values
        self._lengths = lengths

    def values(self):
        return self._values

    def lengths(self):
        return self._lengths

    def offsets(self):
        return _offsets(self._lengths)


def _offsets(lengths):
    """Where each bag of `lengths` starts in the values, and one past the last."""
    return torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])


def _integers(x, what):
    if not isinstance(x, torch.Tensor) or x.dim() != 1 or x.is_floating_point() or \
            x.is_complex() or x.dtype == torch.bool:
        raise _invalid(f"{what} are a 1-D integer tensor")
    return x.to(torch.int64).cpu()


class _Lookup(torch.autograd.Function):
    """Every id's row, each table in one request; backward sends their gradients to the
    shards in one request (a key repeated within a table summed)."""

    @staticmethod
    def forward(ctx, anchor, session, handles, ids, counts, table_of):
        rows, pending = _darcy._lookup_features(handles, ids, counts, table_of, True)
        ctx.pending = pending
        ctx.session = session
        return torch.from_numpy(rows)

    @staticmethod
    def backward(ctx, grad):
        ctx.pending.backward(grad.detach().float().contiguous().cpu().numpy())
        ctx.session._wrote()
        return None, None, None, None, None, None


class _Collection(DarcyModule):
    """What both collections share: their tables, the features each serves, reading jagged
    input and looking every table up in one request."""

    def __init__(self, session, tables, device=None):
        super().__init__(session, device)
        if not tables:
            raise _invalid("a collection needs at least one table")
        self._tables = []
        self._configs = list(tables)
        self._feature_table = {}
        self._dim = {}
        for config in self._configs:
            if not isinstance(config, EmbeddingConfig):
                raise _invalid(f"tables holds a {type(config).__name__}; EmbeddingConfig or "
                               "EmbeddingBagConfig")
            if not config.feature_names:
                raise _invalid(f"table '{config.name}' serves no feature")
            table = session.embedding(config.name, config.embedding_dim,
                                      optimizer=config.optimizer,
                                      initializer=config.initializer,
                                      admission=config.admission, eviction=config.eviction,
                                      store=config.store)
            if any(table is t for t in self._tables):
                raise _invalid(f"table '{config.name}' is configured twice; list its features "
                               "in one config")
            for feature in config.feature_names:
                if feature in self._feature_table:
                    raise _invalid(f"feature '{feature}' is served by two tables")
                self._feature_table[feature] = len(self._tables)
                self._dim[feature] = config.embedding_dim
            self._tables.append(table)
        self._features = [f for config in self._configs for f in config.feature_names]
        self._handles = [t._handle for t in self._tables]
        self._plans = {}

    def tables(self):
        """The collection's darcy.Table objects, in config order."""
        return list(self._tables)

    def features(self):
        return list(self._features)

    def _plan(self, keys):
        """For input features `keys` (checked): their tables' indexes and the permutation to
        the collection's feature order, made once per order."""
        plan = self._plans.get(keys)
        if plan is None:
            table_of = np.array([self._feature_table[k] for k in keys], dtype=np.int64)
            order = [keys.index(f) for f in self._features]
            plan = (table_of, None if order == list(range(len(keys))) else torch.tensor(order))
            self._plans[keys] = plan
        return plan

    def _read(self, features):
        """(keys, int64 ids, lengths (features, batch), weights or None), every check done
        before any lookup."""
        try:
            keys, values, lengths = features.keys(), features.values(), features.lengths()
            weights = features.weights_or_none()
        except AttributeError:
            raise _invalid(f"features are a {type(features).__name__}; a KeyedJaggedTensor "
                           "(keys, values, lengths or offsets, weights)") from None
        keys = tuple(keys)
        if keys not in self._plans:
            unknown = [k for k in keys if k not in self._feature_table]
            if unknown:
                raise _invalid(f"unknown feature '{unknown[0]}'; the collection serves "
                               f"{self._features}")
            missing = [f for f in self._features if f not in keys]
            if missing:
                raise _invalid(f"feature '{missing[0]}' is missing from the input")
            if len(set(keys)) != len(keys):
                raise _invalid("a feature is given twice")
        if not isinstance(values, torch.Tensor) or values.dim() != 1 or \
                values.is_floating_point() or values.is_complex() or values.dtype == torch.bool:
            raise _invalid(f"values of dtype {getattr(values, 'dtype', type(values).__name__)};"
                           " ids are a 1-D integer tensor")
        lengths = _integers(lengths, "lengths")
        if lengths.numel() % len(keys) != 0:
            raise _invalid(f"{lengths.numel()} lengths for {len(keys)} features: each feature "
                           "has one a example")
        if bool((lengths < 0).any()):
            raise _invalid("a negative length")
        total = int(lengths.sum())
        if total != values.numel():
            raise _invalid(f"lengths sum to {total}, but there are {values.numel()} values")
        if weights is not None and (not isinstance(weights, torch.Tensor) or
                                    not weights.is_floating_point() or
                                    weights.shape != values.shape):
            raise _invalid("weights are a float tensor of one weight a value")
        return keys, values.detach().to(torch.int64).cpu(), \
            lengths.reshape(len(keys), -1), weights

    def _rows(self, keys, ids, lengths):
        """Every id's row in input order, a 1-D float32 tensor (each of its table's dim);
        through autograd in training."""
        table_of, _ = self._plan(keys)
        counts = lengths.sum(1).numpy()
        if self.training and torch.is_grad_enabled():
            return _Lookup.apply(torch.empty(0, requires_grad=True), self._darcy_session,
                                 self._handles, ids.numpy(), counts, table_of)
        rows, _ = _darcy._lookup_features(self._handles, ids.numpy(), counts, table_of, False)
        return torch.from_numpy(rows)


class EmbeddingBagCollection(_Collection):
    """TorchRec's EmbeddingBagCollection over Darcy tables made in `session` from `tables`
    (EmbeddingBagConfig: a table's name, dim, pooling, settings and the features it serves).
    forward(features) takes a KeyedJaggedTensor holding every feature of the collection and
    answers a KeyedTensor of each example's pooled rows, on `device`; an empty bag pools to
    zeros. In training mode under autograd, the backward sends the rows' gradients to the
    shards, where each table's optimizer applies them. Bad input (an unknown or missing
    feature, lengths that do not sum to the values, a wrong dtype) raises
    darcy.InvalidArgument before any row changes."""

    def __init__(self, session, tables, device=None):
        for config in tables:
            if isinstance(config, EmbeddingBagConfig) and config.pooling not in ("sum", "mean"):
                raise _invalid(f"pooling {config.pooling!r} of table '{config.name}'; "
                               "\"sum\" or \"mean\"")
        super().__init__(session, tables, device)
        self._mean = {f: getattr(c, "pooling", "sum") == "mean" for c in self._configs
                      for f in c.feature_names}
        self._dims = [self._dim[f] for f in self._features]

    def forward(self, features):
        keys, ids, lengths, weights = self._read(features)
        rows = self._rows(keys, ids, lengths)
        dims = [self._dim[k] for k in keys]
        if len(set(dims)) == 1:
            if weights is None and ids.numel() == lengths.numel() and \
                    bool((lengths == 1).all()):
                # One id a bag (a CTR model's fields): its row is its bag, summed or averaged.
                pooled = rows.view(len(keys), lengths.shape[1], dims[0])
            else:
                pooled = self._pool(rows.view(-1, dims[0]), lengths, weights, keys)
            _, order = self._plan(keys)
            if order is not None:
                pooled = pooled.index_select(0, order)
            out = pooled.transpose(0, 1).reshape(lengths.shape[1], -1)
        else:
            counts = lengths.sum(1).tolist()
            parts = rows.split([n * d for n, d in zip(counts, dims)])
            per_weights = [None] * len(keys) if weights is None else weights.split(counts)
            pooled = {k: self._pool(p.view(-1, d), lengths[i:i + 1], per_weights[i], (k,))[0]
                      for i, (k, p, d) in enumerate(zip(keys, parts, dims))}
            out = torch.cat([pooled[f] for f in self._features], dim=1)
        return KeyedTensor(self._features, self._dims, out.to(self.device))

    def _pool(self, per_id, lengths, weights, keys):
        """(features, batch, dim): each bag of `per_id`'s rows (features `keys` in turn, their
        bags as `lengths` (features, batch) says) pooled as its feature's table says."""
        if weights is not None:
            per_id = per_id * weights.detach().to(per_id.dtype).cpu().unsqueeze(1)
        bags = lengths.numel()
        bag_of = torch.repeat_interleave(torch.arange(bags), lengths.reshape(-1))
        out = torch.zeros(bags, per_id.shape[1], dtype=per_id.dtype).index_add(0, bag_of,
                                                                               per_id)
        out = out.view(len(keys), lengths.shape[1], -1)
        mean = [self._mean[k] for k in keys]
        if any(mean):
            divisor = torch.where(torch.tensor(mean).unsqueeze(1), lengths.clamp(min=1),
                                  torch.ones_like(lengths))
            out = out / divisor.to(out.dtype).unsqueeze(2)
        return out


class EmbeddingCollection(_Collection):
    """TorchRec's EmbeddingCollection over Darcy tables: as EmbeddingBagCollection, without
    pooling; forward(features) answers {feature: JaggedTensor} of each id's row, on `device`,
    for sequences."""

    def forward(self, features):
        keys, ids, lengths, weights = self._read(features)
        if weights is not None:
            raise _invalid("an EmbeddingCollection takes no weights")
        rows = self._rows(keys, ids, lengths)
        counts = lengths.sum(1).tolist()
        dims = [self._dim[k] for k in keys]
        parts = rows.split([n * d for n, d in zip(counts, dims)])
        return {k: JaggedTensor(p.view(-1, d).to(self.device), lengths[i])
                for i, (k, p, d) in enumerate(zip(keys, parts, dims))}
