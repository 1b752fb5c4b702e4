# A peer of darcy-bench, built into it as peers::estimator_torch_mlp_py (apps/CMakeLists.txt).
# The peer: the same MLP in PyTorch, trained as its users train it: the training set in one
# tensor, a shuffled permutation per epoch, batches of 128 by index, Adam. Gradients are reset
# with zero_grad(set_to_none=True), PyTorch's own advice for speed (1.13's default zeroes them in
# place, and accumulating into them makes this build's steps ~1.5x slower). Prints the median
# steps/s of the timed epochs, after an untimed warm-up of 50 steps.
import gzip, json, re, sys, time
import numpy as np
import torch
data_dir, repeats, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(1)
with gzip.open(data_dir + "/train-images-idx3-ubyte.gz") as f:
    x = torch.from_numpy(np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32) / 255)
with gzip.open(data_dir + "/train-labels-idx1-ubyte.gz") as f:
    y = torch.from_numpy(np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64))
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                            torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = torch.nn.CrossEntropyLoss()
def steps(count, perm):
    for i in range(count):
        idx = perm[i * 128:(i + 1) * 128]
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x[idx]), y[idx]).backward()
        opt.step()
per_epoch = len(x) // 128
steps(min(50, per_epoch), torch.randperm(len(x)))
rates = []
for r in range(repeats):
    perm = torch.randperm(len(x))
    start = time.perf_counter()
    steps(per_epoch, perm)
    rates.append(per_epoch / (time.perf_counter() - start))
blas = re.search(r"BLAS_INFO=([^,]*)", torch.__config__.show())
print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                  "blas": "BLAS_INFO=" + (blas.group(1) if blas else "unknown"),
                  "steps_per_s": sorted(rates)[len(rates) // 2]}), flush=True)
