# A peer of darcy-bench, built into it as peers::ctr_torch_dlrm_py (apps/CMakeLists.txt).
# The peers, as DLRM's users run its reference (dlrm_s_pytorch.py): a dictionary per field built
# in a first pass over the training file (ids unseen in it read row 0), one
# nn.EmbeddingBag(sparse=True) per field initialised U(-sqrt(1/n), sqrt(1/n)), the same MLPs and
# interaction, SGD at 0.1 for every parameter, batches of a shuffled permutation. "hashed" is the
# same model with each field hashed into 1M rows (--max-ind-range). "lr" is a logistic regression
# on every field and every pair of fields hashed into 2^22 weights. Each prints one JSON line:
# examples/s of training (parsing excluded) and the test AUC. It runs after ctr_peer_common_py
# (load, auc, dictionary_ids, mlp, FIELDS).
import json, re, sys, time
import numpy as np
import torch
train_path, test_path, epochs, batch, threads, dim = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
bottom = [int(x) for x in sys.argv[7].split(",")]
top = [int(x) for x in sys.argv[8].split(",")]
variants = sys.argv[9].split(",")
torch.set_num_threads(threads)
F = FIELDS
t0 = time.perf_counter()
ytr, xtr, ctr = load(train_path)
yte, xte, cte = load(test_path)
load_s = time.perf_counter() - t0
def hashed_ids(n):
    def ids(cats):
        out = np.zeros((len(cats), F), dtype=np.int64)
        for i, row in enumerate(cats):
            for f in range(F):
                v = row[f]
                out[i, f] = (int(v, 16) % (n - 1)) + 1 if v else 0
        return out
    return ids(ctr), ids(cte), [n] * F
class DLRM(torch.nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.emb = torch.nn.ModuleList()
        for n in sizes:
            e = torch.nn.EmbeddingBag(n, dim, mode="sum", sparse=True)
            a = np.sqrt(1.0 / n)
            e.weight.data.uniform_(-a, a)
            self.emb.append(e)
        self.bot = mlp([13] + bottom, True)
        k = F + 1
        self.top = mlp([dim + k * (k - 1) // 2] + top + [1], False)
        self.li, self.lj = torch.tril_indices(k, k, -1)
        self.offsets = None
    def forward(self, x, c):
        z0 = self.bot(x)
        n = c.shape[0]
        if self.offsets is None or self.offsets.shape[0] != n:
            self.offsets = torch.arange(n)
        T = torch.stack([z0] + [e(c[:, f], self.offsets) for f, e in enumerate(self.emb)], 1)
        Z = torch.bmm(T, T.transpose(1, 2))[:, self.li, self.lj]
        return self.top(torch.cat([z0, Z], 1)).squeeze(1)
class HashedLR(torch.nn.Module):
    # Logistic regression on every field and every pair of fields, hashed into 2^22 weights.
    def __init__(self, buckets):
        super().__init__()
        self.buckets = buckets
        self.w = torch.nn.EmbeddingBag(buckets, 1, mode="sum", sparse=True)
        self.w.weight.data.zero_()
        self.lin = torch.nn.Linear(13, 1)
    def forward(self, x, c):
        return (self.w(c.long()) + self.lin(x)).squeeze(1)
def lr_features(ids):
    # int32 columns filled in place: 351 int64 columns of 4M rows, stacked, took 23 GB.
    out = np.empty((ids.shape[0], F + F * (F - 1) // 2), dtype=np.int32)
    k = 0
    for f in range(F):
        out[:, k] = (ids[:, f] * 1000003 + f) % (1 << 22); k += 1
    for a in range(F):
        for b in range(a + 1, F):
            out[:, k] = ((ids[:, a] * 2654435761 + ids[:, b] * 40503 + a * 64 + b) ^ 0x5bd1e995) % (1 << 22); k += 1
    return out
def train_eval(name, model, ctr_ids, cte_ids, sparse_lr, dense_lr, dense_opt):
    torch.manual_seed(1)
    sparse = [p for m in model.modules() if isinstance(m, torch.nn.EmbeddingBag) for p in m.parameters()]
    ids_sparse = {id(p) for p in sparse}
    dense = [p for p in model.parameters() if id(p) not in ids_sparse]
    opts = [torch.optim.SGD(sparse, lr=sparse_lr)]
    if dense:
        opts.append(torch.optim.SGD(dense, lr=dense_lr) if dense_opt == "sgd" else torch.optim.Adam(dense, lr=dense_lr))
    X = torch.from_numpy(xtr); C = torch.from_numpy(ctr_ids); Y = torch.from_numpy(ytr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    n = len(Y); steps = 0
    start = time.perf_counter()
    for ep in range(epochs):
        perm = torch.randperm(n)
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            for o in opts: o.zero_grad(set_to_none=True)
            loss_fn(model(X[idx], C[idx]), Y[idx]).backward()
            for o in opts: o.step()
            steps += 1
    seconds = time.perf_counter() - start
    with torch.no_grad():
        scores = []
        Xt = torch.from_numpy(xte); Ct = torch.from_numpy(cte_ids)
        for i in range(0, len(yte), 4096):
            scores.append(model(Xt[i:i + 4096], Ct[i:i + 4096]).numpy())
    s = np.concatenate(scores)
    out = {"variant": name, "examples_per_s": epochs * n / seconds, "seconds": seconds, "auc": auc(s, yte), "steps": steps}
    print(json.dumps(out), flush=True)
blas = re.search(r"BLAS_INFO=([^,]*)", torch.__config__.show())
print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "blas": "BLAS_INFO=" + (blas.group(1) if blas else "unknown"), "load_s": load_s}), flush=True)
for v in variants:
    if v == "dict":
        a, b, sizes = dictionary_ids(ctr, cte)
        train_eval("dict", DLRM(sizes), a, b, 0.1, 0.1, "sgd")
    elif v == "hashed":
        a, b, sizes = hashed_ids(1000000)
        train_eval("hashed", DLRM(sizes), a, b, 0.1, 0.1, "sgd")
    elif v == "lr":
        a, b, _ = hashed_ids(1 << 30)
        train_eval("lr", HashedLR(1 << 22), lr_features(a), lr_features(b), 0.1, 0.01, "sgd")
