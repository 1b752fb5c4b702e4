"""How a table's rows start, train, enter and leave: the update rule its shards run on each
row (SGDRule, AdagradRule, ...: table settings, not torch.optim optimizers), the initializer
of new rows, the admission of new keys, the eviction of old rows and the sampler that draws
its negatives for a sampled softmax. Each is a small frozen
dataclass; a table takes one of each (docs/python.md)."""

import dataclasses
from typing import ClassVar


@dataclasses.dataclass(frozen=True)
class SGDRule:
    learning_rate: float = 0.01
    kind: ClassVar[str] = "sgd"


@dataclasses.dataclass(frozen=True)
class AdagradRule:
    learning_rate: float = 0.01
    initial_accumulator: float = 0.1
    kind: ClassVar[str] = "adagrad"


@dataclasses.dataclass(frozen=True)
class MomentumRule:
    learning_rate: float = 0.01
    momentum: float = 0.9
    nesterov: bool = False
    kind: ClassVar[str] = "momentum"


@dataclasses.dataclass(frozen=True)
class AdamRule:
    """Lazy Adam: each row counts its own updates for the bias correction."""
    learning_rate: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8
    kind: ClassVar[str] = "adam"


@dataclasses.dataclass(frozen=True)
class FtrlRule:
    """FTRL-proximal with learning-rate power -0.5."""
    learning_rate: float = 0.01
    l1: float = 0.0
    l2: float = 0.0
    initial_accumulator: float = 0.1
    kind: ClassVar[str] = "ftrl"


class Rule:
    """Any update rule the shards know by name, a built-in ("rowwise_adagrad",
    "clipped_adagrad", "adagrad", ...) or one a plugin registered (darcy.load_plugin, `darcy node
    --plugin`), with its parameters by name: Rule("rowwise_adagrad", learning_rate=0.05). A
    parameter left out takes the rule's default; one it does not take, or a name no shard
    knows, fails the table's creation."""
    kind: ClassVar[str] = "rule"

    def __init__(self, name: str, **params: float):
        if not isinstance(name, str) or not name:
            from darcy._darcy import InvalidArgument
            raise InvalidArgument(f"invalid argument: a rule's name, not {name!r}")
        self.name = name
        self.params = {k: float(v) for k, v in params.items()}

    def __repr__(self):
        given = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"darcy.Rule({self.name!r}{given})"

    def __eq__(self, other):
        return isinstance(other, Rule) and (self.name, self.params) == (other.name, other.params)

    def __hash__(self):
        return hash((self.name, tuple(sorted(self.params.items()))))


@dataclasses.dataclass(frozen=True)
class Zeros:
    kind: ClassVar[str] = "zeros"


@dataclasses.dataclass(frozen=True)
class Uniform:
    low: float = -0.05
    high: float = 0.05
    seed: int = 1
    kind: ClassVar[str] = "uniform"


@dataclasses.dataclass(frozen=True)
class Normal:
    mean: float = 0.0
    stddev: float = 0.05
    seed: int = 1
    kind: ClassVar[str] = "normal"


@dataclasses.dataclass(frozen=True)
class TruncatedNormal:
    mean: float = 0.0
    stddev: float = 0.05
    seed: int = 1
    kind: ClassVar[str] = "truncated_normal"


@dataclasses.dataclass(frozen=True)
class AdmitAll:
    kind: ClassVar[str] = "none"


@dataclasses.dataclass(frozen=True)
class Frequency:
    """A key gets a row at its min_count-th sighting (exact counts)."""
    min_count: int = 2
    kind: ClassVar[str] = "frequency"


@dataclasses.dataclass(frozen=True)
class Bloom:
    """Frequency admission through a counting Bloom filter: bounded memory, approximate."""
    min_count: int = 2
    capacity: int = 1 << 20
    fp_rate: float = 0.01
    kind: ClassVar[str] = "bloom"


@dataclasses.dataclass(frozen=True)
class KeepAll:
    kind: ClassVar[str] = "none"


@dataclasses.dataclass(frozen=True)
class TTL:
    """Rows not updated for more than ttl_steps steps go."""
    ttl_steps: int
    kind: ClassVar[str] = "ttl"


@dataclasses.dataclass(frozen=True)
class LFU:
    """Past max_rows, the least frequently used rows go."""
    max_rows: int
    kind: ClassVar[str] = "lfu"


@dataclasses.dataclass(frozen=True)
class LRU:
    """Past max_rows, the least recently used rows go."""
    max_rows: int
    kind: ClassVar[str] = "lru"


@dataclasses.dataclass(frozen=True)
class UnigramSampler:
    """Negatives drawn by frequency^power, frequency counting each row's lookups, every
    occurrence of a key in a lookup's batch (the default, power 0.75)."""
    power: float = 0.75
    kind: ClassVar[str] = "unigram"


@dataclasses.dataclass(frozen=True)
class LogUniformSampler:
    """Negatives drawn log-uniformly by frequency rank: P(rank r) = log((r + 2) / (r + 1)) /
    log(n + 1), rows of one frequency class sharing the ranks of their class (docs/embeddings.md)."""
    kind: ClassVar[str] = "log_uniform"


@dataclasses.dataclass(frozen=True)
class UniformSampler:
    """Negatives drawn uniformly over the rows."""
    kind: ClassVar[str] = "uniform"


@dataclasses.dataclass(frozen=True)
class AnnIndex:
    """An approximate inner-product index each shard keeps over the table's rows, for
    Table.top_k(..., approximate=True): `lists` inverted lists (0: the square root of the rows,
    8 to 4096), `probes` lists read a query, `rerank` candidates scored exactly, changed rows
    indexed every `refresh_ms` milliseconds (docs/embeddings.md)."""
    lists: int = 0
    probes: int = 16
    rerank: int = 100
    refresh_ms: int = 100
    kind: ClassVar[str] = "ivf"


OPTIMIZERS = (SGDRule, AdagradRule, MomentumRule, AdamRule, FtrlRule, Rule)

# The names these rules had before they were told apart from torch.optim's classes.
RENAMED = {"SGD": SGDRule, "Adagrad": AdagradRule, "Momentum": MomentumRule, "Adam": AdamRule,
           "Ftrl": FtrlRule}
INITIALIZERS = (Zeros, Uniform, Normal, TruncatedNormal)
ADMISSIONS = (AdmitAll, Frequency, Bloom)
EVICTIONS = (KeepAll, TTL, LFU, LRU)
SAMPLERS = (UnigramSampler, LogUniformSampler, UniformSampler)
ANN_INDEXES = (AnnIndex,)


def as_dict(value, kinds, what):
    """The dict the extension reads: the value's fields and its kind. Raises
    darcy.InvalidArgument for a value of none of `kinds`."""
    if not isinstance(value, kinds):
        from darcy._darcy import InvalidArgument
        names = ", ".join("darcy." + k.__name__ for k in kinds)
        raise InvalidArgument(f"invalid argument: {what} {value!r}; one of {names}")
    if isinstance(value, Rule):
        return {"kind": value.kind, "rule": value.name, "params": dict(value.params)}
    fields = dataclasses.asdict(value)
    fields["kind"] = value.kind
    return fields
