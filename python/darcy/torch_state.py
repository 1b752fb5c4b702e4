"""What every Darcy module of darcy.torch shares: the device its outputs go to (a buffer
without data, so that model.to(device) moves them) and its tables' place in the model's state.
model.state_dict() carries, as each Darcy module's extra state, every table of the module's
session: the rows inline, or a reference to a checkpoint in the session's checkpoint_dir when it
has one; load_state_dict() restores them (docs/python.md, "State")."""

import contextlib
import os
import tempfile
import warnings

import torch

from darcy import _darcy

FORMAT = "darcy.tables"
VERSION = 1


def _invalid(message):
    return _darcy.InvalidArgument("invalid argument: " + message)


def capture(session):
    """The state of every table of `session`, saved once for as long as nothing is written:
    a dict with the checkpoint's id and either its files (inline) or the checkpoint_dir that
    holds it."""
    if session._beside is not None:
        return session._beside
    cached = session._state_cache
    if cached is not None and cached[0] == session._writes:
        return cached[1]
    state = {"format": FORMAT, "version": VERSION, "tables": sorted(session.tables)}
    if session.checkpoint_dir:
        root = os.path.abspath(session.checkpoint_dir)
        session.save(root, 0, 0)
        state.update(checkpoint_dir=root, checkpoint=_darcy._current_checkpoint(root))
    else:
        with tempfile.TemporaryDirectory(prefix="darcy-state-") as root:
            session.save(root, 0, 0)
            files = {}
            for folder, _, names in os.walk(root):
                for name in names:
                    path = os.path.join(folder, name)
                    with open(path, "rb") as f:
                        files[os.path.relpath(path, root)] = f.read()
            state.update(checkpoint=_darcy._current_checkpoint(root), files=files)
    session._state_cache = (session._writes, state)
    return state


def _write_files(root, files):
    """Writes an inline state's files under `root`; darcy.InvalidArgument for a name that
    leaves it."""
    if not isinstance(files, dict):
        raise _invalid("the tables' state holds no files")
    for name, data in files.items():
        if not isinstance(name, str) or not isinstance(data, bytes) or os.path.isabs(name) or \
                os.path.normpath(name).split(os.sep)[0] == os.pardir:
            raise _invalid(f"the tables' state holds a file {name!r} outside its checkpoint")
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def restore(session, state):
    """Loads a state that capture() made into `session`'s tables, unless they hold it already
    with nothing written since. darcy.InvalidArgument for a state of another kind,
    darcy.NotFound for a referenced checkpoint its directory no longer holds, and the errors
    of Session.restore (darcy.CorruptFile, ...)."""
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise _invalid("the state of a Darcy module is not a darcy.tables state")
    if state.get("version") != VERSION:
        raise _invalid(f"darcy.tables state version {state.get('version')!r}; this build reads "
                       f"{VERSION}")
    checkpoint = state.get("checkpoint")
    if session._restored == (checkpoint, session._writes):
        return
    if state.get("beside"):
        raise _invalid(f"this state dict names the tables' checkpoint {checkpoint} that "
                       "darcy.torch.save_checkpoint wrote beside it; "
                       "darcy.torch.load_checkpoint(model, PATH) loads both")
    if "files" in state:
        with tempfile.TemporaryDirectory(prefix="darcy-state-") as root:
            _write_files(root, state["files"])
            session.restore(root)
    else:
        session._restore_checkpoint(state.get("checkpoint_dir") or "", checkpoint or "")
    session._restored = (checkpoint, session._writes)


@contextlib.contextmanager
def beside(session, root):
    """While open, a state dict names the checkpoint just saved under `root` for `session`'s
    tables (darcy.torch.save_checkpoint) instead of saving them again."""
    session._beside = {"format": FORMAT, "version": VERSION, "tables": sorted(session.tables),
                       "checkpoint": _darcy._current_checkpoint(root), "beside": True}
    try:
        yield
    finally:
        session._beside = None


def restore_beside(session, root):
    """Restores the checkpoint under `root` (darcy.torch.load_checkpoint), so that the state
    dict saved beside it, which names it, loads without restoring it again; returns its
    step."""
    step = session.restore(root)
    session._restored = (_darcy._current_checkpoint(root), session._writes)
    return step


class DarcyModule(torch.nn.Module):
    """A module over tables of `session`: outputs on `device` (the CPU by default; model.to()
    moves them), and the session's tables in its state dict."""

    def __init__(self, session, device=None):
        super().__init__()
        self._darcy_session = session
        self.register_buffer("_device", torch.empty(0, device=device), persistent=False)

    @property
    def device(self):
        """Where the outputs go."""
        return self._device.device

    def get_extra_state(self):
        return capture(self._darcy_session)

    def set_extra_state(self, state):
        restore(self._darcy_session, state)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
        key = prefix + "_extra_state"
        if key in missing_keys:  # a state dict of before the tables joined it
            missing_keys.remove(key)
            warnings.warn(f"darcy: the state dict holds no tables for {prefix or 'the model'}; "
                          "they keep their rows", stacklevel=3)
