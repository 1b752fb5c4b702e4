# On-disk format of Darcy checkpoints, for every service: the parts its actors write (one
# ShardFile per embedding and shard; WALS factor files), and a Manifest, written last and
# atomically, that names the parts with their checksums. A reader needs nothing but this
# schema: configs are stored in full.
@0xa783a2f53e8c3adb;

struct Initializer {
  kind @0 :UInt8;      # 0 zeros, 1 uniform, 2 normal, 3 truncated_normal
  low @1 :Float32;
  high @2 :Float32;
  mean @3 :Float32;
  stddev @4 :Float32;
  seed @5 :UInt64;
}

struct Optimizer {
  kind @0 :UInt8;      # 0 sgd, 1 adagrad, 2 momentum, 3 adam, 4 ftrl
  learningRate @1 :Float32;
  initialAccumulator @2 :Float32;
  momentum @3 :Float32;
  nesterov @4 :Bool;
  beta1 @5 :Float32;
  beta2 @6 :Float32;
  epsilon @7 :Float32;
  l1 @8 :Float32;
  l2 @9 :Float32;
  rule @10 :Text;              # a registered update rule's name; empty: the rule of `kind`
  params @11 :List(RuleParam); # its parameters, when `rule` is set
}

struct RuleParam {
  name @0 :Text;
  value @1 :Float32;
}

struct EmbeddingConfig {
  name @0 :Text;
  dim @1 :UInt32;
  init @2 :Initializer;
  optimizer @3 :Optimizer;
  admissionKind @4 :UInt8;
  admissionMinCount @5 :UInt32;
  admissionCapacity @6 :UInt64;
  admissionFpRate @7 :Float64;
  evictionKind @8 :UInt8;
  evictionTtlSteps @9 :Int64;
  evictionMaxRows @10 :UInt64;
  backend @11 :UInt8;
  readOnly @12 :Bool;
  defaultValue @13 :List(Float32);
  maxBatch @14 :UInt32;
  backendPath @15 :Text;
  cacheBytes @16 :UInt64;
  stalenessMs @17 :UInt32 = 1000;
  samplerKind @18 :UInt8 = 2;      # sampler_kind: 0 uniform, 1 log_uniform, 2 unigram
  samplerPower @19 :Float64 = 0.75;
  annEnabled @20 :Bool;            # ann_config: the shards' index for approximate top-k
  annLists @21 :UInt32;
  annProbes @22 :UInt32 = 16;
  annRerank @23 :UInt32 = 100;
  annRefreshMs @24 :UInt32 = 100;
}

struct Row {
  key @0 :Data;
  values @1 :List(Float32);
  slots @2 :List(Float32);     # the update rule's state, slotFloats values
  frequency @3 :UInt64;
  updates @4 :UInt64;
  lastUpdate @5 :Int64;
}

struct ShardFile {
  embedding @0 :Text;
  dim @1 :UInt32;
  slotCount @2 :UInt32;
  rows @3 :List(Row);
  delta @4 :Bool;              # false: every row of the shard; true: only the rows changed
                               # since the checkpoint the manifest's base names, and `deleted`
  deleted @5 :List(Data);      # a delta's keys whose rows were removed (evicted) since its base
  slotFloats @6 :UInt32;       # floats of each row's rule state; slotCount is that over dim,
                               # rounded down (files written before rules: 0, slotCount * dim)
}

struct FileEntry {
  path @0 :Text;               # relative to the checkpoint directory
  checksum @1 :UInt64;         # hash of the file's bytes
  rows @2 :UInt64;
  bytes @3 :UInt64;
}

struct EmbeddingEntry {
  config @0 :EmbeddingConfig;
  files @1 :List(FileEntry);
}

struct WalsManifest {
  runId @0 :UInt64;            # the run (data, params, layout) the factors belong to
  losses @1 :List(Float64);    # the loss after each completed sweep
}

struct Manifest {
  formatVersion @0 :UInt32;    # 1: embedding only; 2: any service; 3: the file ends with a
                               # checksum trailer ("DRCYMSUM", then the hash of all before it)
  step @1 :Int64;              # embedding: the caller's step; wals: the last completed sweep
  shardCount @2 :UInt32;
  embeddings @3 :List(EmbeddingEntry);
  extra @4 :Data;              # caller state saved with the checkpoint (dense state, input position)
  service @5 :Text;            # "embedding" or "wals"; empty in format 1
  checkpoint @6 :Text;         # the directory under the root that holds this checkpoint's parts
  parts @7 :List(FileEntry);   # parts of services that name plain files (wals), shard order
  wals @8 :WalsManifest;
  base @9 :Text;               # an incremental checkpoint: the checkpoint (directory) it applies
                               # on, the previous one of its chain; empty for a full checkpoint
  sameAs @10 :Text;            # a full checkpoint taken at the state of this delta of the
                               # previous chain, with nothing in between; empty otherwise
}
