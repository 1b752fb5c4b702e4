"""PyTorch modules over Darcy's tables: DynamicEmbedding and DynamicEmbeddingBag look rows up in
the forward pass and send the rows' gradients to the shards in the backward pass, where the
table's own optimizer applies them. Dense parameters stay with a torch optimizer.

    table = session.embedding("ads", 16, optimizer=darcy.AdagradRule(0.05))
    bag = darcy.torch.DynamicEmbeddingBag(table, mode="sum")
    out = bag(ids, offsets)        # like nn.EmbeddingBag, over raw keys: no dictionary
    loss(out).backward()           # the shards update the rows here

Each module's outputs go to its device (device=, or wherever model.to() moved it), and
model.state_dict() carries its session's tables (darcy/torch_state.py).
"""

import os
import warnings

import numpy as np
import torch

from darcy import _darcy
from darcy.session import Table
from darcy import torch_state
from darcy.torch_export import export, write_sync  # noqa: F401
from darcy.torch_look_ahead import look_ahead  # noqa: F401
from darcy.torch_state import DarcyModule
from darcy.torch_collections import (EmbeddingBagCollection, EmbeddingBagConfig,  # noqa: F401
                                     EmbeddingCollection, EmbeddingConfig, JaggedTensor,
                                     KeyedJaggedTensor, KeyedTensor)

__all__ = ["DynamicEmbedding", "DynamicEmbeddingBag", "sampled_logits", "sampled_softmax_loss",
           "save_checkpoint", "load_checkpoint", "export", "write_sync", "look_ahead",
           "EmbeddingBagConfig", "EmbeddingConfig", "EmbeddingBagCollection",
           "EmbeddingCollection", "KeyedJaggedTensor", "KeyedTensor", "JaggedTensor"]


def _invalid(message):
    return _darcy.InvalidArgument("invalid argument: " + message)


def _flat_keys(keys):
    """keys as the table takes them (a list of str/bytes, or a 1-D integer array), with the
    shape the output takes before its last axis."""
    if isinstance(keys, torch.Tensor):
        if keys.is_floating_point() or keys.is_complex():
            raise _invalid(f"keys of dtype {keys.dtype}; ids are integers")
        return keys.detach().cpu().reshape(-1).numpy(), tuple(keys.shape)
    if isinstance(keys, np.ndarray):
        return keys.reshape(-1), keys.shape
    if isinstance(keys, (list, tuple)):
        return list(keys), (len(keys),)
    raise _invalid(f"keys of type {type(keys).__name__}; a list of str or bytes, or an integer "
                   "tensor or array")


class _Lookup(torch.autograd.Function):
    """The distinct keys' rows; backward sends their gradients to the shards."""

    @staticmethod
    def forward(ctx, anchor, table, keys):
        rows, inverse, pending = table.lookup_for_backward(keys)
        ctx.pending = pending
        inverse = torch.from_numpy(inverse)
        ctx.mark_non_differentiable(inverse)
        return torch.from_numpy(rows), inverse

    @staticmethod
    def backward(ctx, grad_rows, _grad_inverse):
        ctx.pending.backward(grad_rows.detach().contiguous().cpu().numpy())
        return None, None, None


def _rows(table, keys, training):
    """(rows of the distinct keys, position of each key among them); the rows carry the
    backward to the shards when training under autograd."""
    if training and torch.is_grad_enabled():
        anchor = torch.empty(0, requires_grad=True)
        return _Lookup.apply(anchor, table, keys)
    rows = torch.from_numpy(table.lookup(keys))
    return rows, None


def _prefetch(table, keys):
    flat, _ = _flat_keys(keys)
    if len(flat) > 0:
        table.prefetch(flat)


def _table(table):
    if not isinstance(table, Table):
        raise _invalid(f"a {type(table).__name__} for a table; a darcy.Table "
                       "(Session.embedding)")
    return table


class DynamicEmbedding(DarcyModule):
    """nn.Embedding over a Darcy table: keys of any shape (an integer tensor or array) or a
    list of str/bytes, to rows of shape keys.shape + (dim,) on `device`. In training mode
    under autograd, the backward sends the rows' gradients to the shards (repeated keys
    summed), where the table's optimizer applies them; in eval mode, or under
    torch.no_grad(), no row changes."""

    def __init__(self, table, device=None):
        super().__init__(_table(table).session, device)
        self.table = table

    def forward(self, keys):
        flat, shape = _flat_keys(keys)
        rows, inverse = _rows(self.table, flat, self.training)
        out = rows if inverse is None else rows.index_select(0, inverse)
        return out.reshape(*shape, self.table.dim).to(self.device)

    def prefetch(self, keys):
        """Hands `keys` (as forward takes them) to the table ahead of the forward that will
        read them (Table.prefetch); look_ahead calls it from its thread."""
        _prefetch(self.table, keys)

    def extra_repr(self):
        return f"table={self.table.name!r}, dim={self.table.dim}"


def _bag_ids(count, offsets, device):
    """The bag of each of `count` keys from `offsets` (nn.EmbeddingBag's: each bag's first
    key), and the number of bags. Raises darcy.InvalidArgument for offsets that are not
    non-decreasing from 0 within the keys."""
    if isinstance(offsets, np.ndarray):
        offsets = torch.from_numpy(offsets)
    if not isinstance(offsets, torch.Tensor) or offsets.dim() != 1 or \
            offsets.is_floating_point():
        raise _invalid("offsets are a 1-D integer tensor, one start a bag")
    offsets = offsets.to(torch.int64).cpu()
    bags = offsets.numel()
    if bags == 0:
        raise _invalid("no offsets: at least one bag")
    if offsets[0].item() != 0:
        raise _invalid(f"offsets start at {offsets[0].item()}, not 0")
    if bags > 1 and bool((offsets[1:] < offsets[:-1]).any()):
        raise _invalid("offsets decrease; each bag starts at or after the one before")
    if offsets[-1].item() > count:
        raise _invalid(f"an offset of {offsets[-1].item()} past the {count} keys")
    lengths = torch.diff(offsets, append=torch.tensor([count]))
    return torch.repeat_interleave(torch.arange(bags), lengths).to(device), lengths, bags


class DynamicEmbeddingBag(DarcyModule):
    """nn.EmbeddingBag over a Darcy table: each bag's rows summed or averaged ("sum",
    "mean"), on `device`. Keys as a 2-D integer tensor (bags of equal size, no offsets), or
    1-D keys (an integer tensor or array, or a list of str/bytes) with `offsets`, each bag's
    first key, as nn.EmbeddingBag takes them. An empty bag gives zeros. per_sample_weights
    (mode "sum") scale each key's row."""

    def __init__(self, table, mode="mean", device=None):
        super().__init__(_table(table).session, device)
        if mode not in ("sum", "mean"):
            raise _invalid(f"mode {mode!r}; \"sum\" or \"mean\"")
        self.table = table
        self.mode = mode

    def forward(self, keys, offsets=None, per_sample_weights=None):
        flat, shape = _flat_keys(keys)
        if offsets is None:
            if len(shape) != 2:
                raise _invalid("1-D keys need offsets (each bag's first key); or pass a 2-D "
                               "tensor of equal bags")
            bags, size = shape
            lengths = torch.full((bags,), size, dtype=torch.int64)
            bag_of = torch.repeat_interleave(torch.arange(bags), size)
        else:
            if len(shape) != 1:
                raise _invalid("keys with offsets are 1-D")
            bag_of, lengths, bags = _bag_ids(len(flat), offsets, torch.device("cpu"))
        if len(flat) == 0:
            return torch.zeros(bags, self.table.dim, device=self.device)
        rows, inverse = _rows(self.table, flat, self.training)
        per_key = rows if inverse is None else rows.index_select(0, inverse)
        if per_sample_weights is not None:
            if self.mode != "sum":
                raise _invalid("per_sample_weights need mode \"sum\", as in nn.EmbeddingBag")
            weights = torch.as_tensor(per_sample_weights).to("cpu", per_key.dtype).reshape(-1)
            if weights.numel() != per_key.shape[0]:
                raise _invalid(f"{weights.numel()} per_sample_weights for "
                               f"{per_key.shape[0]} keys")
            per_key = per_key * weights.unsqueeze(1)
        out = torch.zeros(bags, self.table.dim, dtype=per_key.dtype).index_add(0, bag_of,
                                                                              per_key)
        if self.mode == "mean":
            out = out / lengths.clamp(min=1).to(out.dtype).unsqueeze(1)
        return out.to(self.device)

    def prefetch(self, keys):
        """Hands `keys` (as forward takes them; offsets do not matter) to the table ahead of
        the forward that will read them (Table.prefetch); look_ahead calls it from its
        thread."""
        _prefetch(self.table, keys)

    def extra_repr(self):
        return f"table={self.table.name!r}, dim={self.table.dim}, mode={self.mode!r}"


class _SampledLogits(torch.autograd.Function):
    """Logits against sampled rows; backward sends the rows' gradients to the shards and
    returns the activations' gradient."""

    @staticmethod
    def forward(ctx, activations, table, positives, num_sampled, seed, at_most):
        logits, labels, pending = table.sampled_logits(
            positives, activations.detach().contiguous().cpu().numpy(), num_sampled, seed,
            at_most)
        return _keep_for_backward(ctx, logits, labels, pending)

    @staticmethod
    def backward(ctx, dlogits, _dlabels):
        return _send_back(ctx, dlogits), None, None, None, None, None


def _keep_for_backward(ctx, logits, labels, pending):
    """A logits Function's forward answer (logits, labels) as tensors, with `pending` kept for
    backward and the labels marked non-differentiable."""
    ctx.pending = pending
    labels = torch.from_numpy(labels)
    ctx.mark_non_differentiable(labels)
    return torch.from_numpy(logits), labels


def _send_back(ctx, dlogits):
    """The rows' gradients of a logits Function's forward sent to the shards; answers
    d(loss)/d(activations)."""
    return torch.from_numpy(ctx.pending.backward(dlogits.detach().contiguous().cpu().numpy()))


class _FullLogits(torch.autograd.Function):
    """Logits against every row of a table, computed on its shards; backward applies the
    rows' gradients there and returns the activations' gradient."""

    @staticmethod
    def forward(ctx, activations, table, positives, max_rows):
        logits, labels, _keys, pending = table.full_logits(
            positives, activations.detach().contiguous().cpu().numpy(), max_rows)
        return _keep_for_backward(ctx, logits, labels, pending)

    @staticmethod
    def backward(ctx, dlogits, _dlabels):
        return _send_back(ctx, dlogits), None, None, None


def sampled_logits(table, positive_keys, activations, num_sampled, seed=1, at_most=False,
                   full_logits_below=0):
    """(logits, labels) of a sampled softmax over `table`'s rows (Table.sampled_logits, whose
    num_sampled, seed and at_most these are), with
    autograd: the loss's backward updates the rows involved on the shards and flows into
    `activations`. positive_keys take every form Table.sampled_logits takes, and an integer
    tensor as an array (1-D: one positive an example). Train with
    sampled_softmax_loss(logits, labels). While the table holds at most full_logits_below
    rows, the logits are those of every row instead (Table.full_logits: a full softmax, no
    sampling, the same loss); 0 always samples."""
    if not isinstance(activations, torch.Tensor) or activations.dim() != 2:
        raise _invalid("activations are a 2-D float tensor (batch, dim)")
    if isinstance(positive_keys, torch.Tensor):
        if positive_keys.is_floating_point() or positive_keys.is_complex():
            raise _invalid(f"positive keys of dtype {positive_keys.dtype}; ids are integers")
        positive_keys = positive_keys.detach().cpu().numpy()
    if full_logits_below < 0:
        raise _invalid(f"full_logits_below {full_logits_below}; 0 or more rows")
    if full_logits_below > 0:
        try:
            return _FullLogits.apply(activations.float(), table, positive_keys,
                                     full_logits_below)
        except _darcy.BatchTooLarge:
            pass
    return _SampledLogits.apply(activations.float(), table, positive_keys, num_sampled, seed,
                                at_most)


def sampled_softmax_loss(logits, labels):
    """The mean cross-entropy of softmax(logits) against `labels` (each example's positives
    share 1; padding and accidental hits are masked with label 0)."""
    return -(labels * torch.log_softmax(logits, 1)).sum(1).mean()


def _tables(model, tables):
    """The tables `model` reaches (its DynamicEmbedding, DynamicEmbeddingBag and collection
    modules' and every darcy.Table held in an attribute of one of its modules, or in a list
    there, such as the output table of a sampled softmax), then `tables`, each once."""
    found = {}
    for module in model.modules():
        for value in vars(module).values():
            for held in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(held, Table):
                    found[id(held)] = held
    for table in tables or ():
        if not isinstance(table, Table):
            raise _invalid(f"tables holds a {type(table).__name__}; darcy.Table objects")
        found[id(table)] = table
    return list(found.values())


def _session(model, tables):
    """The one session of the tables `model` reaches and `tables` (None without tables)."""
    sessions = {id(t.session): t.session for t in _tables(model, tables)}
    if len(sessions) > 1:
        raise _invalid("the model's tables come from more than one session")
    return next(iter(sessions.values()), None)


def save_checkpoint(model, path, step=0, full_every=0, tables=None):
    """Checkpoints `model`: the session of every table it reaches (its Darcy modules' and any
    darcy.Table a module holds as an attribute, as the output table of a sampled softmax) and
    of `tables` (tables used elsewhere), through Darcy's one checkpoint mechanism (PATH/tables,
    consistent across shards; incremental with full_every > 0, as Session.save), and its
    state_dict (PATH/module.pt), whose Darcy modules name that checkpoint instead of holding
    rows. Every table of that session is saved. For tables larger than memory: a state dict
    holds every row unless the session has a checkpoint_dir."""
    session = _session(model, tables)
    os.makedirs(path, exist_ok=True)
    if session is None:
        torch.save(model.state_dict(), os.path.join(path, "module.pt"))
        return
    saved = os.path.abspath(os.path.join(path, "tables"))
    session.save(saved, step, full_every)
    with torch_state.beside(session, saved):
        torch.save(model.state_dict(), os.path.join(path, "module.pt"))


def load_checkpoint(model, path, tables=None):
    """Restores what save_checkpoint() wrote into `model` (the tables' session, found as
    save_checkpoint() finds it, and its state_dict); returns the step saved with the tables (0
    without tables). Raises darcy.NotFound when save_checkpoint() wrote tables and `model`
    (with `tables`) reaches none."""
    session = _session(model, tables)
    saved = os.path.abspath(os.path.join(path, "tables"))
    if session is None and os.path.isdir(saved):
        raise _darcy.NotFound(f"not found: {saved} holds tables, and the model reaches none; "
                              "pass them with tables=")
    step = torch_state.restore_beside(session, saved) if session is not None else 0
    model.load_state_dict(torch.load(os.path.join(path, "module.pt")))
    return step


_RENAMED = {"save": save_checkpoint, "load": load_checkpoint}


def __getattr__(name):
    """darcy.torch.save and load: the old names of save_checkpoint and load_checkpoint, which
    no longer shadow torch.save and torch.load; with a warning."""
    if name in _RENAMED:
        new = _RENAMED[name].__name__
        warnings.warn(f"darcy.torch.{name} is now darcy.torch.{new}", DeprecationWarning,
                      stacklevel=2)
        return _RENAMED[name]
    raise AttributeError(f"module 'darcy.torch' has no attribute {name!r}")
