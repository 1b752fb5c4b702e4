"""Darcy from Python: sessions over Darcy's dynamic embedding service (darcy.Session), tables
whose shards run their own optimizer (darcy.Table), PyTorch modules over them (darcy.torch),
node processes with fault injection (darcy.LocalCluster), and Darcy's errors as exceptions
under darcy.Error. The guide is docs/python.md."""

from darcy import _darcy
from darcy.cluster import LocalCluster
from darcy.config import (SGD, Adagrad, Momentum, Adam, Ftrl, Zeros, Uniform, Normal,
                          TruncatedNormal, AdmitAll, Frequency, Bloom, KeepAll, TTL, LFU, LRU)
from darcy.session import Session, Table

Error = _darcy.Error
# One class per darcy::errc: darcy.DimensionMismatch, darcy.UnknownEmbedding, ...
for _name in dir(_darcy):
    _value = getattr(_darcy, _name)
    if isinstance(_value, type) and issubclass(_value, Error):
        globals()[_name] = _value
del _name, _value
