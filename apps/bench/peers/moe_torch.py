# A peer of darcy-bench, built into it as peers::moe_torch_py (apps/CMakeLists.txt).
# The peer: the same layers written plainly in PyTorch, as the issue asks: one parameter tensor
# per expert (nn.ModuleList), one gather into expert order, contiguous per-expert matmuls, one
# scatter-add back. Prints one JSON line per setting. An optional tenth argument names the torch
# device (default "cpu"); the GPU benchmark passes "cuda". Arguments: setting tokens d n k hidden
# dense_hidden steps threads [device]; the line holds moe_tokens_per_s, dense_tokens_per_s, the
# torch version and its BLAS.
import json, re, statistics, sys, time
import torch
setting, tokens, d, n, k, hidden, dense_hidden, steps, threads = sys.argv[1:10]
device = sys.argv[10] if len(sys.argv) > 10 else "cpu"
tokens, d, n, k, hidden, dense_hidden, steps, threads = map(
    int, (tokens, d, n, k, hidden, dense_hidden, steps, threads))
torch.set_num_threads(threads)
torch.manual_seed(1)
nn = torch.nn
if setting == "seed":
    experts = nn.ModuleList([nn.Linear(d, d, bias=False) for _ in range(n)])
else:
    experts = nn.ModuleList([nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, d))
                             for _ in range(n)])
experts.to(device)
w_gate = nn.Parameter((torch.randn(d, n) / d ** 0.5).to(device))
dense = nn.Sequential(nn.Linear(d, dense_hidden), nn.ReLU(), nn.Linear(dense_hidden, d)).to(device)
x = torch.randn(tokens, d, device=device, requires_grad=True)
dy = torch.randn(tokens, d, device=device)
sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)

def moe_step():
    logits = x @ w_gate
    if setting == "seed":  # batchwise mask: the top m examples of each expert
        probs = torch.softmax(logits, dim=1)
        m = k * tokens // n
        mask = torch.zeros_like(probs).scatter_(0, probs.topk(m, dim=0).indices, 1.0)
        masked = probs * mask
        gates = masked / masked.sum(dim=1, keepdim=True).clamp_min(1e-12)
    else:  # top-k, renormalised
        top, idx = logits.topk(k, dim=1)
        gates = torch.zeros_like(logits).scatter(1, idx, torch.softmax(top, dim=1))
    expert_idx, row_idx = (gates > 0).t().nonzero(as_tuple=True)
    counts = torch.bincount(expert_idx, minlength=n).tolist()
    inputs = x.index_select(0, row_idx)
    outputs = torch.cat([experts[e](chunk)
                         for e, chunk in enumerate(torch.split(inputs, counts))])
    weights = gates[row_idx, expert_idx].unsqueeze(1)
    y = torch.zeros(tokens, d, device=device).index_add(0, row_idx, outputs * weights)
    y.backward(dy)

def dense_step():
    dense(x).backward(dy)

def median_seconds(step):
    times = []
    for i in range(steps + 1):
        for p in list(experts.parameters()) + list(dense.parameters()) + [w_gate, x]:
            p.grad = None
        start = time.perf_counter()
        step()
        sync()
        if i > 0:
            times.append(time.perf_counter() - start)
    return statistics.median(times)

blas = re.search(r"BLAS_INFO=([^,]*)", torch.__config__.show())
print(json.dumps({"setting": setting, "device": device, "torch": torch.__version__, "threads": torch.get_num_threads(),
                  "blas": "BLAS_INFO=" + (blas.group(1) if blas else "unknown"),
                  "moe_tokens_per_s": tokens / median_seconds(moe_step),
                  "dense_tokens_per_s": tokens / median_seconds(dense_step)}), flush=True)
