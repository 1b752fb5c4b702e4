"""darcy.torch.export: a PyTorch model as a serving export that `darcy serve` answers :predict
for. Its dense part becomes TorchScript, traced with every Darcy module replaced by an input
that carries the module's output; its tables become a Darcy checkpoint beside it; a spec says
how a request's instances feed both (docs/python.md, "Serving a PyTorch model")."""

import inspect
import io
import json
import os

import torch

from darcy import _darcy
from darcy.torch_collections import EmbeddingBagCollection, KeyedJaggedTensor, KeyedTensor
from darcy.torch_state import DarcyModule

FORMAT = "darcy.torch_export"
VERSION = 1


def _invalid(message):
    return _darcy.InvalidArgument("invalid argument: export: " + message)


class _Slot(torch.nn.Module):
    """Stands for a Darcy module while the dense part is traced: answers the tensor it is
    given, shaped as the module answers."""

    def __init__(self, module):
        super().__init__()
        # Not the module itself: the trace must hold no Darcy module.
        self.keyed = (module.features(), list(module._dims)) \
            if isinstance(module, EmbeddingBagCollection) else None
        self.value = None

    def forward(self, *args, **kwargs):
        if self.keyed is not None:
            return KeyedTensor(self.keyed[0], self.keyed[1], self.value)
        return self.value


def _slot_spec(path, module, args):
    """What serving computes for Darcy module `module` (at `path` in the model), called with
    `args` in the example: the features it pools and their tables."""
    if isinstance(module, EmbeddingBagCollection):
        if not args or not isinstance(args[0], KeyedJaggedTensor):
            raise _invalid(f"the collection '{path}' takes a darcy.torch.KeyedJaggedTensor "
                           "from the model's inputs")
        pools = []
        for config in module._configs:
            for feature in config.feature_names:
                pools.append({"feature": feature, "table": config.name,
                              "dim": config.embedding_dim,
                              "pooling": getattr(config, "pooling", "sum")})
        return {"kind": "collection", "module": path, "pools": pools}
    from darcy.torch import DynamicEmbeddingBag
    if isinstance(module, DynamicEmbeddingBag):
        keys = args[0] if args else None
        if len(args) != 1 or not isinstance(keys, torch.Tensor) or keys.dim() != 2:
            raise _invalid(f"the bag '{path}' is exported when it takes a 2-D integer tensor "
                           "(a bag an example), without offsets or weights")
        return {"kind": "bag", "module": path,
                "pools": [{"feature": path, "table": module.table.name,
                           "dim": module.table.dim, "pooling": module.mode}]}
    raise _invalid(f"'{path}' is a {type(module).__name__}: serving pools bags "
                   "(EmbeddingBagCollection, DynamicEmbeddingBag); it has no export yet")


def _dense_inputs(model, example_inputs):
    """(name, tensor) of each float tensor among the example inputs, named by the forward's
    parameters: the dense inputs a request gives by name."""
    names = list(inspect.signature(model.forward).parameters)
    dense = []
    for i, x in enumerate(example_inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            if x.dim() < 1:
                raise _invalid(f"input {i} is a scalar; inputs have a batch dimension first")
            dense.append((names[i] if i < len(names) else f"input{i}", x))
        elif not isinstance(x, (torch.Tensor, KeyedJaggedTensor)):
            raise _invalid(f"input {i} is a {type(x).__name__}; tensors and "
                           "KeyedJaggedTensors only")
    return dense


def _record(model, example_inputs):
    """The Darcy modules the example calls, in call order, with their arguments and outputs."""
    calls = []
    paths = {id(m): p for p, m in model.named_modules()}
    hooks = [m.register_forward_hook(lambda m, args, out: calls.append((m, args, out)))
             for m in model.modules() if isinstance(m, DarcyModule)]
    try:
        with torch.no_grad():
            expected = model(*example_inputs)
    finally:
        for h in hooks:
            h.remove()
    seen = set()
    recorded = []
    for module, args, out in calls:
        if id(module) in seen:
            raise _invalid(f"'{paths[id(module)]}' is called twice in one forward")
        seen.add(id(module))
        recorded.append((paths[id(module)], module, args, out))
    if not recorded:
        raise _invalid("the model calls no Darcy module")
    return expected, recorded


def _tensor_of(out):
    return out.values() if isinstance(out, KeyedTensor) else out


class _Dense(torch.nn.Module):
    """The model with its Darcy modules as inputs: forward(dense inputs..., slot values...)."""

    def __init__(self, model, slots, example_inputs, dense_positions):
        super().__init__()
        self.model = model
        self.slots = slots
        self.example_inputs = example_inputs
        self.dense_positions = dense_positions

    def forward(self, *inputs):
        args = list(self.example_inputs)
        for position, x in zip(self.dense_positions, inputs):
            args[position] = x
        for slot, value in zip(self.slots, inputs[len(self.dense_positions):]):
            slot.value = value
        return self.model(*args)


def _swap(model, replacements):
    """Puts each module of `replacements` (path -> module) in place; returns the ones taken."""
    taken = {}
    for path, module in replacements.items():
        parent_path, _, name = path.rpartition(".")
        parent = model.get_submodule(parent_path) if parent_path else model
        taken[path] = getattr(parent, name)
        setattr(parent, name, module)
    return taken


def trace_dense(model, example_inputs):
    """(TorchScript of the dense part, spec, the eval() output of the example): every check
    done, the traced graph checked against the model on the example and on its first half."""
    if not isinstance(model, torch.nn.Module):
        raise _invalid(f"a {type(model).__name__} for the model; a torch.nn.Module")
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    dense = _dense_inputs(model, example_inputs)
    was_training = model.training
    model.eval()
    try:
        expected, recorded = _record(model, example_inputs)
        if not isinstance(expected, torch.Tensor) or not expected.is_floating_point():
            raise _invalid("the model's output is not one float tensor")
        sessions = {id(m._darcy_session) for _, m, _, _ in recorded}
        if len(sessions) != 1:
            raise _invalid("the model's Darcy modules come from more than one session")
        slots_spec = [_slot_spec(path, m, args) for path, m, args, _ in recorded]
        slot_values = [_tensor_of(out).detach().cpu() for _, _, _, out in recorded]
        slots = {path: _Slot(m) for path, m, _, _ in recorded}
        positions = [i for i, x in enumerate(example_inputs)
                     if isinstance(x, torch.Tensor) and x.is_floating_point()]
        taken = _swap(model, slots)
        try:
            wrapper = _Dense(model, [slots[p] for p, _, _, _ in recorded], example_inputs,
                             positions)
            inputs = tuple(x for _, x in dense) + tuple(slot_values)
            with torch.no_grad():
                traced = torch.jit.trace(wrapper, inputs, check_trace=False)
                _check(traced, inputs, expected)
        finally:
            _swap(model, taken)
    finally:
        model.train(was_training)
    spec = {"format": FORMAT, "version": VERSION,
            "dense": [{"name": n, "shape": list(x.shape[1:])} for n, x in dense],
            "slots": slots_spec, "output": list(expected.shape[1:])}
    return traced, spec, expected, recorded[0][1]._darcy_session


def _check(traced, inputs, expected):
    """The traced graph gives the model's output on the example and follows the batch (on its
    first half); darcy.InvalidArgument otherwise, naming the likely cause."""
    got = traced(*inputs)
    if not torch.allclose(got, expected, rtol=1e-5, atol=1e-6):
        raise _invalid("the traced dense part does not give the model's output: does the "
                       "forward branch on its inputs?")
    batch = inputs[0].shape[0]
    if batch > 1:
        half = tuple(x[:batch // 2] for x in inputs)
        try:
            follows = traced(*half).shape[0] == batch // 2
        except RuntimeError:
            follows = False
        if not follows:
            raise _invalid("the traced dense part does not follow the batch size: does the "
                           "model compute from its ids outside Darcy modules?")


def export(model, path, example_inputs, keep=3):
    """Writes a serving export of `model` as the next version under `path` (PATH/N, the newest
    `keep` kept) and returns its directory. The dense part is traced on `example_inputs` (the
    forward's arguments: float tensors, the dense inputs a request gives by the forward's
    parameter names; KeyedJaggedTensors and integer tensors, which the model hands to its Darcy
    modules) with every Darcy module replaced by an input; the tables of the modules' session
    are saved beside it. Raises darcy.InvalidArgument, writing nothing, for a model it cannot
    trace this way (a Darcy module other than a bag or bag collection, one called twice,
    output that is not one float tensor, a graph that does not follow the batch)."""
    traced, spec, _, session = trace_dense(model, example_inputs)
    buffer = io.BytesIO()
    torch.jit.save(traced, buffer)
    version = session._handle.write_torch_export(os.path.abspath(os.fspath(path)),
                                                 buffer.getvalue(), json.dumps(spec), keep)
    return os.path.join(os.fspath(path), version)


def write_sync(model, sync_dir, example_inputs, step=0, full_every=8):
    """Writes a sync of `model` under `sync_dir` for the servers of its export to follow: its
    session's tables (Session.save with full_every: a delta on the previous sync there, a full
    checkpoint every full_every) and its dense part traced again on `example_inputs`
    (SYNC_DIR/dense), both at `step`; returns the tables' checkpoint. `darcy serve` applies it
    on POST :sync {"dir": SYNC_DIR} (darcy.serving.Client.sync). The model must trace as
    export() traces it, to the same inputs."""
    traced, spec, _, session = trace_dense(model, example_inputs)
    root = os.path.abspath(os.fspath(sync_dir))
    session.save(root, step, full_every)
    buffer = io.BytesIO()
    torch.jit.save(traced, buffer)
    _darcy._write_torch_dense_sync(root, buffer.getvalue(), json.dumps(spec), step)
    return _darcy._current_checkpoint(root)
