# SPDX-License-Identifier: Apache-2.0
# Cost-model calibration for one GPU (run on a GPU machine with PyTorch: python3 scripts/gpu-calibrate.py
# with OUT set to an output folder): bf16 GEMM and attention throughput and HBM bandwidth, written
# to $OUT/calibration.json; docs/cost-model.md "Calibration" summarises a run on an H200.
import torch, json, torch.nn.functional as F
d = torch.device("cuda"); torch.backends.cuda.matmul.allow_tf32 = False
def timeit(fn, it=30):
    for _ in range(5): fn()
    torch.cuda.synchronize(); s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(it): fn()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e) / 1e3 / it
res = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "gemm": [], "sdpa": [], "hbm": {}}
for m, k, n in [(4096,4096,4096),(4096,4096,14336),(4096,14336,4096),(8192,8192,8192),(8192,8192,28672),(16384,8192,1024),(4096,4096,128256),(2048,4096,1024)]:
    a = torch.randn(m, k, device=d, dtype=torch.bfloat16); b = torch.randn(k, n, device=d, dtype=torch.bfloat16)
    t = timeit(lambda: a @ b); res["gemm"].append({"m": m, "k": k, "n": n, "seconds": t, "tflops": 2*m*k*n/t/1e12})
for b_, h, s, dim in [(1,32,4096,128),(1,64,8192,128),(4,32,2048,128)]:
    q = torch.randn(b_, h, s, dim, device=d, dtype=torch.bfloat16); k_ = torch.randn_like(q); v = torch.randn_like(q)
    t = timeit(lambda: F.scaled_dot_product_attention(q, k_, v, is_causal=False), 10)
    res["sdpa"].append({"b": b_, "heads": h, "seq": s, "head_dim": dim, "seconds": t, "tflops": 4*b_*h*s*s*dim/t/1e12})
x = torch.empty(2**31, device=d, dtype=torch.bfloat16); y = torch.empty_like(x)
t = timeit(lambda: y.copy_(x), 20); res["hbm"] = {"bytes_moved": 2*x.numel()*2, "seconds": t, "bytes_per_second": 2*x.numel()*2/t}
z = torch.randn(8192*4096, device=d, dtype=torch.bfloat16)
t = timeit(lambda: torch.nn.functional.silu(z), 50); res["hbm"]["silu_bytes_per_second"] = 2*z.numel()*2/t
print(json.dumps(res, indent=1))
json.dump(res, open(__import__("os").environ["OUT"] + "/calibration.json", "w"), indent=1)
