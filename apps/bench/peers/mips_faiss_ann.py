# A peer of darcy-bench, built into it as peers::mips_faiss_ann_py (apps/CMakeLists.txt).
# FAISS's side: each family built once, then swept from fast to exact; one JSON line a point. For
# inner product it also runs FAISS's usual MIPS recipe: the reduction to L2 search by norm
# augmentation (x -> [x, sqrt(M^2 - |x|^2)], q -> [q, 0]), under IVF-Flat and HNSW. A build that
# passes `budget` seconds is stopped and reported as skipped.
import json, math, sys, time
import numpy as np
import faiss
items_path, n, d, queries_path, nq, metric, k, threads, truth_path, families, budget, factors, min_seconds = sys.argv[1:14]
# 1: one query a search call (batch 1), as a live table is queried; absent or 0: all at once.
one_at_a_time = len(sys.argv) > 14 and sys.argv[14] == "1"
n, d, nq, k, threads, budget = map(int, (n, d, nq, k, threads, budget))
min_seconds = float(min_seconds)  # each point repeats the query set for at least this long
families = set(families.split(","))
faiss.omp_set_num_threads(threads)
xb = np.fromfile(items_path, dtype=np.float32).reshape(n, d)
xq = np.fromfile(queries_path, dtype=np.float32).reshape(nq, d)
truth = np.fromfile(truth_path, dtype=np.int64).reshape(nq, k)
mt = faiss.METRIC_INNER_PRODUCT if metric == "ip" else faiss.METRIC_L2
def wanted(family):
    return "all" in families or family in families
def recall(found):
    return sum(len(set(found[i]) & set(truth[i])) for i in range(nq)) / (nq * k)
def build(factory, data=xb, metric=mt):
    start = time.perf_counter()
    index = faiss.index_factory(data.shape[1], factory, metric)
    # index_factory turns on polysemous training for 8-bit IVF-PQ; it serves only polysemous
    # search, which no sweep here uses, and costs seconds per sub-quantizer (20 minutes for
    # Fashion-MNIST's 196).
    if "IVF" in factory:
        outer = faiss.downcast_index(index)
        ivf = faiss.downcast_index(faiss.extract_index_ivf(getattr(outer, "base_index", outer)))
        if hasattr(ivf, "do_polysemous_training"):
            ivf.do_polysemous_training = False
    index.train(data)
    step = 50000
    for first in range(0, n, step):
        index.add(data[first:first + step])
        spent = time.perf_counter() - start
        if spent > budget and first + step < n:
            print(json.dumps({"skipped": factory, "why": f"build stopped after {spent:.0f} s "
                              f"(budget {budget} s) with {first + step} of {n} items added"}),
                  flush=True)
            return None
    print(json.dumps({"built": factory, "seconds": time.perf_counter() - start}), flush=True)
    return index
def sweep(name, index, settings, queries=xq):
    for label, apply in settings:
        apply()
        start, searched = time.perf_counter(), 0
        while searched == 0 or time.perf_counter() - start < min_seconds:
            if one_at_a_time:
                found = np.vstack([index.search(queries[i:i + 1], k)[1] for i in range(nq)])
            else:
                _, found = index.search(queries, k)
            searched += nq
        qps = searched / (time.perf_counter() - start)
        r = recall(found)
        print(json.dumps({"index": name, "config": label, "qps": qps, "recall": r}), flush=True)
        if r >= 0.995:
            break
# IVF-Flat builds one index per list count f sqrt(n); the quantized IVF families, 4 sqrt(n).
flat_nlists = sorted({max(1, int(float(f) * math.sqrt(n))) for f in factors.split(",")})
nlist = int(4 * math.sqrt(n))
def ivf_settings(index, k_factor=None):
    # FAISS 1.7.3's extract_index_ivf does not unwrap a re-ranking (RFlat) index: take its base.
    refine = faiss.downcast_index(index) if k_factor else None
    ivf = faiss.extract_index_ivf(refine.base_index if refine is not None else index)
    probes = [p for p in (1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 512, 1024, 2048)
              if p <= ivf.nlist]
    def setter(p):
        def apply():
            ivf.nprobe = p
            if refine is not None:
                refine.k_factor = k_factor
        return apply
    return [(f"nprobe={p}" + (f",k_factor={k_factor}" if k_factor else ""), setter(p))
            for p in probes]
def hnsw_settings(index):
    def setter(e):
        def apply():
            index.hnsw.efSearch = e
        return apply
    return [(f"efSearch={e}", setter(e)) for e in (16, 32, 64, 128, 256, 512, 1024)]
if wanted("ivf-flat"):
    for lists in flat_nlists:
        index = build(f"IVF{lists},Flat")
        if index is not None:
            sweep(f"IVF{lists}-Flat", index, ivf_settings(index))
        del index
if wanted("ivf-pq"):
    m8 = max(m for m in range(1, d // 4 + 1) if d % m == 0)
    index = build(f"IVF{nlist},PQ{m8},RFlat")
    if index is not None:
        for kf in (2, 4, 8, 16):
            sweep(f"IVF-PQ{m8}+re-rank", index, ivf_settings(index, kf))
    del index
if wanted("ivf-pq4fs"):
    try:
        m4 = d // 2 if d % 2 == 0 else d
        index = build(f"IVF{nlist},PQ{m4}x4fs,RFlat")
        if index is not None:
            for kf in (2, 4, 8, 16):
                sweep(f"IVF-PQ{m4}x4fs+re-rank", index, ivf_settings(index, kf))
        del index
    except RuntimeError as e:
        print(json.dumps({"skipped": "PQx4fs", "why": str(e)[:200]}), flush=True)
if wanted("hnsw"):
    index = build("HNSW32")
    if index is not None:
        sweep("HNSW32", index, hnsw_settings(index))
    del index
if metric == "ip" and (wanted("l2-ivf-flat") or wanted("l2-hnsw")):
    norms = (xb * xb).sum(axis=1)
    xb2 = np.hstack([xb, np.sqrt(np.maximum(norms.max() - norms, 0))[:, None]]).astype(np.float32)
    xq2 = np.hstack([xq, np.zeros((nq, 1), dtype=np.float32)])
    if wanted("l2-ivf-flat"):
        for lists in flat_nlists:
            index = build(f"IVF{lists},Flat", xb2, faiss.METRIC_L2)
            if index is not None:
                sweep(f"L2-reduced IVF{lists}-Flat", index, ivf_settings(index), xq2)
            del index
    if wanted("l2-hnsw"):
        index = build("HNSW32", xb2, faiss.METRIC_L2)
        if index is not None:
            sweep("L2-reduced HNSW32", index, hnsw_settings(index), xq2)
        del index
