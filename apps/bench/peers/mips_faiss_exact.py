# A peer of darcy-bench, built into it as peers::mips_faiss_exact_py (apps/CMakeLists.txt).
# FAISS's side: the same vectors, the same k, batch 1 then batch 256, and its batch-1 answers.
import json, sys, time
import numpy as np
import faiss
items_path, n, d, queries_path, nq, metric, k, q1, batches, threads, out = sys.argv[1:]
n, d, nq, k, q1, batches, threads = map(int, (n, d, nq, k, q1, batches, threads))
faiss.omp_set_num_threads(threads)
xb = np.fromfile(items_path, dtype=np.float32).reshape(n, d)
xq = np.fromfile(queries_path, dtype=np.float32).reshape(nq, d)
index = faiss.IndexFlatIP(d) if metric == "ip" else faiss.IndexFlatL2(d)
index.add(xb)
ids = np.zeros((q1, k), dtype=np.int64)
start = time.perf_counter()
for i in range(q1):
    _, ids[i:i + 1] = index.search(xq[i:i + 1], k)
b1 = q1 / (time.perf_counter() - start)
start = time.perf_counter()
for b in range(batches):
    index.search(xq[(b * 256) % nq:][:256], k)
b256 = batches * 256 / (time.perf_counter() - start)
ids.tofile(out)
print(json.dumps({"b1_qps": b1, "b256_qps": b256}))
