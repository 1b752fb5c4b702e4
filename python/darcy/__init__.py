"""Darcy from Python: sessions over Darcy's dynamic embedding service (darcy.Session), tables
whose shards run their own update rule (darcy.Table), PyTorch modules over them (darcy.torch),
node processes with fault injection (darcy.LocalCluster), and Darcy's errors as exceptions
under darcy.Error. The guide is docs/python.md."""

import warnings as _warnings

from darcy import _darcy
from darcy.cluster import LocalCluster
from darcy.config import (SGDRule, AdagradRule, MomentumRule, AdamRule, FtrlRule, Zeros,
                          Uniform, Normal, TruncatedNormal, AdmitAll, Frequency, Bloom, KeepAll,
                          TTL, LFU, LRU, UnigramSampler, LogUniformSampler, UniformSampler,
                          AnnIndex, Rule)
from darcy.config import RENAMED as _RENAMED
from darcy.session import Session, Table

Error = _darcy.Error
# One class per darcy::errc: darcy.DimensionMismatch, darcy.UnknownEmbedding, ...
for _name in dir(_darcy):
    _value = getattr(_darcy, _name)
    if isinstance(_value, type) and issubclass(_value, Error):
        globals()[_name] = _value
del _name, _value


def load_plugin(path):
    """Loads a shared library of update rules (docs/update-rules.md) into this process and
    returns their names; this process's tables may then name them with darcy.Rule. A
    LocalCluster's nodes load theirs with LocalCluster(plugins=[path]). Raises
    darcy.NotFound, darcy.IoError, darcy.Unsupported (not a plugin, or built for another rule
    ABI) or darcy.InvalidConfig (a rule name taken by another rule)."""
    return _darcy.load_plugin(str(path))


def __getattr__(name):
    """darcy.SGD, darcy.Adagrad, ...: the old names of the update rules, with a warning."""
    if name in _RENAMED:
        new = _RENAMED[name].__name__
        _warnings.warn(f"darcy.{name} is now darcy.{new}: a table's update rule, not a "
                       "torch.optim optimizer", DeprecationWarning, stacklevel=2)
        return _RENAMED[name]
    raise AttributeError(f"module 'darcy' has no attribute {name!r}")
