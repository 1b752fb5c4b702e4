# A peer of darcy-bench, built into it as peers::mips_hnswlib_ann_py (apps/CMakeLists.txt).
# hnswlib's side of the quantized sweep: one graph per M (ef_construction 200), each searched
# with ef from small to large; one JSON line a point, as the FAISS peer prints them. Inner
# product sets use hnswlib's "ip" space, L2 sets its "l2" space. A build that passes `budget`
# seconds is stopped and reported as skipped.
import json, sys, time
import numpy as np
import hnswlib
items_path, n, d, queries_path, nq, metric, k, threads, truth_path, ms, budget, min_seconds = sys.argv[1:]
n, d, nq, k, threads, budget = map(int, (n, d, nq, k, threads, budget))
min_seconds = float(min_seconds)  # each point repeats the query set for at least this long
xb = np.fromfile(items_path, dtype=np.float32).reshape(n, d)
xq = np.fromfile(queries_path, dtype=np.float32).reshape(nq, d)
truth = np.fromfile(truth_path, dtype=np.int64).reshape(nq, k)
def recall(found):
    return sum(len(set(found[i]) & set(truth[i])) for i in range(nq)) / (nq * k)
for m in (int(x) for x in ms.split(",")):
    start = time.perf_counter()
    index = hnswlib.Index(space="ip" if metric == "ip" else "l2", dim=d)
    index.init_index(max_elements=n, ef_construction=200, M=m)
    index.set_num_threads(threads)
    step, built = 50000, True
    for first in range(0, n, step):
        index.add_items(xb[first:first + step], np.arange(first, min(n, first + step)))
        spent = time.perf_counter() - start
        if spent > budget and first + step < n:
            print(json.dumps({"skipped": f"hnswlib-M{m}", "why": f"build stopped after "
                              f"{spent:.0f} s (budget {budget} s)"}), flush=True)
            built = False
            break
    if not built:
        continue
    print(json.dumps({"built": f"hnswlib-M{m}", "seconds": time.perf_counter() - start}),
          flush=True)
    for ef in (10, 12, 16, 20, 24, 32, 40, 48, 56, 64, 80, 96, 128, 160, 256, 384, 512, 1024):
        if ef < k:
            continue
        index.set_ef(ef)
        start, searched = time.perf_counter(), 0
        while searched == 0 or time.perf_counter() - start < min_seconds:
            found, _ = index.knn_query(xq, k=k)
            searched += nq
        qps = searched / (time.perf_counter() - start)
        r = recall(found)
        print(json.dumps({"index": f"hnswlib-M{m}", "config": f"ef={ef}", "qps": qps,
                          "recall": r}), flush=True)
        if r >= 0.995:
            break
    del index
