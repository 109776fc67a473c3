# SPDX-License-Identifier: Apache-2.0
"""Measured one-GPU training steps of Hugging Face model shapes: the ground truth simulate is
tested against (tests/sim/calibrate/gpu_steps_test.cc, docs/validation.md "One GPU, measured").
Two sweeps of different models: "test" (docs/measurements/h200-steps), which simulate is checked
against, and "fit" (docs/measurements/h200-fit, every step traced), which `ds-plan calibrate
--steps` fits a cluster's efficiencies and host figures to.

Run on a GPU machine with PyTorch and transformers, from the repository root:
    python3 scripts/gpu-ground-truth.py --out DIR [--sweep test|fit] [--budget-seconds S]
(scripts/gpu-ground-truth.sh runs it as the device check does). Nothing is downloaded: every
model is built from a config.json in this repository with random weights.

What one step is, so that `ds-plan simulate` (world 1, ZeRO stage 0, bf16, AdamW) describes the
same work and the same memory:
  - the model's parameters and gradients in bf16; an fp32 master copy of every parameter and
    AdamW's two fp32 moments (DeepSpeed's bf16 mixed precision: 2 + 2 + 12 bytes per parameter);
  - one micro-batch: forward with labels (transformers' causal-LM loss, logits upcast to fp32),
    backward, then the optimizer: bf16 gradients cast into the fp32 master gradients, one fused
    AdamW step (torch.optim.AdamW(fused=True)) on the masters, the masters copied back to bf16;
  - recompute "full" is transformers' gradient_checkpointing_enable (use_reentrant=False): every
    decoder layer recomputed in backward, as DeepSpeed's activation checkpointing of whole layers.
Per point: the median of TIMED steps after WARMUP steps (CUDA events around the whole step,
synchronised, so host overheads count), the median host time to issue forward, backward and the
optimizer step (perf_counter around each, no synchronisation inside the step: when it exceeds the
GPU's work the phase is host-bound), torch.cuda.max_memory_allocated / max_memory_reserved
over the timed steps (the caching allocator emptied before the point), and memory_allocated
between steps (the model states alone). One step of a few points is traced with torch.profiler
(Kineto Chrome JSON, gzip), which `ds-plan compare` reads.
"""
import argparse
import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

import torch

WARMUP = 3
TIMED = 6

MODELS = {
    # name: the config.json it is built from (random weights)
    "llama-3.2-1b": "samples/models/llama-3.2-1b.json",
    "llama-3-8b-4layers": "docs/measurements/h200-steps/models/llama-3-8b-4layers.json",
    "qwen3-30b-a3b-4layers": "docs/measurements/h200-steps/models/qwen3-30b-a3b-4layers.json",
    "llama-3.2-3b": "docs/measurements/h200-fit/models/llama-3.2-3b.json",
    "llama-3-70b-2layers": "docs/measurements/h200-fit/models/llama-3-70b-2layers.json",
    "mixtral-8x7b-2layers": "docs/measurements/h200-fit/models/mixtral-8x7b-2layers.json",
}

# (model, micro batch, sequence, recompute, attention, trace this point)
SWEEPS = {}
SWEEPS["test"] = [
    ("llama-3.2-1b", 1, 1024, "none", "sdpa", False),
    ("llama-3.2-1b", 1, 4096, "none", "sdpa", True),
    ("llama-3.2-1b", 4, 4096, "none", "sdpa", False),
    ("llama-3.2-1b", 1, 16384, "none", "sdpa", False),
    ("llama-3.2-1b", 1, 4096, "full", "sdpa", False),
    ("llama-3.2-1b", 1, 16384, "full", "sdpa", False),
    ("llama-3.2-1b", 1, 1024, "none", "eager", False),
    ("llama-3.2-1b", 1, 4096, "none", "eager", False),
    ("llama-3-8b-4layers", 1, 2048, "none", "sdpa", False),
    ("llama-3-8b-4layers", 1, 8192, "none", "sdpa", True),
    ("llama-3-8b-4layers", 2, 8192, "none", "sdpa", False),
    ("llama-3-8b-4layers", 1, 16384, "none", "sdpa", False),
    ("llama-3-8b-4layers", 1, 8192, "full", "sdpa", True),
    ("llama-3-8b-4layers", 1, 16384, "full", "sdpa", False),
    ("llama-3-8b-4layers", 1, 2048, "none", "eager", False),
    ("llama-3-8b-4layers", 1, 4096, "none", "eager", False),
    ("qwen3-30b-a3b-4layers", 1, 2048, "none", "sdpa", False),
    ("qwen3-30b-a3b-4layers", 1, 8192, "none", "sdpa", True),
    ("qwen3-30b-a3b-4layers", 1, 16384, "none", "sdpa", False),
    ("qwen3-30b-a3b-4layers", 1, 8192, "full", "sdpa", False),
    ("qwen3-30b-a3b-4layers", 1, 16384, "full", "sdpa", False),
    ("llama-3-8b-4layers", 1, 4096, "none", "sdpa", False),
    ("llama-3.2-1b", 2, 8192, "none", "sdpa", False),
]

# The steps the H200 preset's efficiencies and host figures are fitted to (docs/measurements/h200-fit):
# other models than the "test" sweep's, every one traced, so that the test sweep stays out of sample.
SWEEPS["fit"] = [
    ("llama-3.2-3b", 1, 512, "none", "sdpa", True),
    ("llama-3.2-3b", 1, 1024, "none", "sdpa", True),
    ("llama-3.2-3b", 1, 4096, "none", "sdpa", True),
    ("llama-3.2-3b", 1, 8192, "full", "sdpa", True),
    ("llama-3.2-3b", 1, 2048, "none", "eager", True),
    ("llama-3-70b-2layers", 1, 4096, "none", "sdpa", True),
    ("llama-3-70b-2layers", 1, 8192, "full", "sdpa", True),
    ("mixtral-8x7b-2layers", 1, 1024, "none", "sdpa", True),
    ("mixtral-8x7b-2layers", 1, 4096, "none", "sdpa", True),
    ("mixtral-8x7b-2layers", 1, 8192, "full", "sdpa", True),
]

COLUMNS = ["model", "config", "layers", "params", "micro_batch", "seq", "recompute", "attention",
           "status", "step_ms_median", "step_ms_min", "step_ms_max", "tokens_per_second",
           "max_allocated_bytes", "max_reserved_bytes", "states_allocated_bytes", "forward_peak_bytes",
           "after_forward_bytes", "backward_peak_bytes", "optimizer_peak_bytes", "trace",
           "host_forward_ms", "host_backward_ms", "host_optimizer_ms", "gpu_kernels"]


def load_config(path):
    from transformers import AutoConfig
    with open(path) as f:
        d = json.load(f)
    d = {k: v for k, v in d.items() if not k.startswith("_")}
    model_type = d.pop("model_type")
    cfg = AutoConfig.for_model(model_type, **d)
    cfg.use_cache = False
    return cfg


class MixedPrecisionAdamW:
    """bf16 model, fp32 masters and AdamW moments (2 + 2 + 12 bytes per parameter)."""

    def __init__(self, model):
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.masters = [p.detach().float().clone().requires_grad_(True) for p in self.params]
        self.opt = torch.optim.AdamW(self.masters, lr=1e-5, fused=True)

    @torch.no_grad()
    def step(self):
        # One annotation around the whole mixed-precision step (gradient casts, AdamW, copy back),
        # as DeepSpeed's BF16_Optimizer.step does all three: ds-plan compare counts it as optimizer.
        with torch.profiler.record_function("ds_plan::optimizer_step"):
            for p, m in zip(self.params, self.masters):
                m.grad = p.grad.float()
                p.grad = None
            self.opt.step()
            for p, m in zip(self.params, self.masters):
                m.grad = None
            torch._foreach_copy_(self.params, self.masters)


def build(name, attention, recompute):
    from transformers import AutoModelForCausalLM
    cfg = load_config(MODELS[name])
    kwargs = {"attn_implementation": attention}
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, **kwargs)
    model = model.to(torch.bfloat16)
    model.train()
    if recompute == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model, cfg


def one_step(model, opt, ids, host=None):
    """host, when given, receives how long the host took to issue each phase (perf_counter, no
    synchronisation inside the step): when it exceeds the GPU's work the step is host-bound."""
    t0 = time.perf_counter()
    with torch.profiler.record_function("ds_plan::forward"):
        out = model(input_ids=ids, labels=ids)
    t1 = time.perf_counter()
    with torch.profiler.record_function("ds_plan::backward"):
        out.loss.backward()
    t2 = time.perf_counter()
    opt.step()
    t3 = time.perf_counter()
    if host is not None:
        host.append((1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (t3 - t2)))
    return out.loss.detach()


def phase_memory(model, opt, ids):
    """One more step, synchronised after each phase: the allocated peak of forward, backward and
    the optimizer step, and what forward leaves allocated for backward (model states, saved
    activations, the logits and the loss's saved tensors)."""
    sync = torch.cuda.synchronize
    sync()
    torch.cuda.reset_peak_memory_stats()
    out = model(input_ids=ids, labels=ids)
    sync()
    forward_peak, after_forward = torch.cuda.max_memory_allocated(), torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out.loss.backward()
    sync()
    backward_peak = torch.cuda.max_memory_allocated()
    del out
    torch.cuda.reset_peak_memory_stats()
    opt.step()
    sync()
    return dict(forward_peak_bytes=forward_peak, after_forward_bytes=after_forward,
                backward_peak_bytes=backward_peak, optimizer_peak_bytes=torch.cuda.max_memory_allocated())


def measure(model, opt, ids):
    loss = None
    for _ in range(WARMUP):
        loss = one_step(model, opt, ids)
    torch.cuda.synchronize()
    if not torch.isfinite(loss):
        raise RuntimeError(f"loss is {loss.item()}")
    states = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times, host = [], []
    for _ in range(TIMED):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        one_step(model, opt, ids, host)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    host_median = [statistics.median(h[i] for h in host) for i in range(3)]
    return times, torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(), states, host_median


def trace_one(model, opt, ids, path):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        one_step(model, opt, ids)
        torch.cuda.synchronize()
    raw = path[:-3]
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as f:
        text = f.read()
    with gzip.open(path, "wb", compresslevel=9) as g:
        g.write(text)
    os.remove(raw)
    events = json.loads(text).get("traceEvents", [])
    return sum(1 for ev in events if ev.get("cat") == "kernel")


def environment():
    import transformers
    env = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": str(torch.backends.cudnn.version()),
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "warmup_steps": WARMUP,
        "timed_steps": TIMED,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        env["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,power.limit,clocks.max.sm,memory.total",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        env["nvidia_smi"] = f"unavailable: {exc}"
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-seconds", type=float, default=420.0,
                    help="skip the remaining points once this much time has passed")
    ap.add_argument("--only", default="", help="comma-separated model names to run")
    ap.add_argument("--sweep", default="test", choices=sorted(SWEEPS),
                    help="test: the steps simulate is checked against; fit: the steps the preset is fitted to")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    env = environment()
    env["command"] = "python3 " + " ".join(sys.argv)
    with open(os.path.join(args.out, "environment.json"), "w") as f:
        json.dump(env, f, indent=1)
    print(json.dumps(env), flush=True)

    tsv = open(os.path.join(args.out, "steps.tsv"), "w")
    tsv.write("\t".join(COLUMNS) + "\n")
    only = set(filter(None, args.only.split(",")))
    live = {}  # the model being measured: key, model, opt, cfg (one at a time on the GPU)
    env["sweep"] = args.sweep
    for name, mb, seq, recompute, attention, traced in SWEEPS[args.sweep]:
        if only and name not in only:
            continue
        row = {c: "" for c in COLUMNS}
        row.update(model=name, config=MODELS[name], micro_batch=mb, seq=seq, recompute=recompute,
                   attention=attention)
        if time.time() - t0 > args.budget_seconds:
            row["status"] = "skipped-budget"
        else:
            try:
                key = (name, attention, recompute)
                if live.get("key") != key:
                    live.clear()
                    torch.cuda.empty_cache()
                    tb = time.time()
                    model, cfg = build(name, attention, recompute)
                    live.update(key=key, model=model, opt=MixedPrecisionAdamW(model), cfg=cfg)
                    del model
                    print(f"built {key} in {time.time() - tb:.1f}s", flush=True)
                    experts = getattr(cfg, "_experts_implementation", None)
                    if experts is not None:
                        env.setdefault("experts_implementation", {})[name] = str(experts)
                cfg = live["cfg"]
                row["layers"] = cfg.num_hidden_layers
                row["params"] = sum(p.numel() for p in live["model"].parameters())
                gen = torch.Generator(device="cuda").manual_seed(1234)
                ids = torch.randint(0, cfg.vocab_size, (mb, seq), device="cuda", generator=gen)
                torch.cuda.empty_cache()
                times, peak, reserved, states, host = measure(live["model"], live["opt"], ids)
                med = statistics.median(times)
                row.update(status="ok", step_ms_median=f"{med:.3f}", step_ms_min=f"{min(times):.3f}",
                           step_ms_max=f"{max(times):.3f}",
                           tokens_per_second=f"{mb * seq / (med / 1e3):.0f}",
                           max_allocated_bytes=peak, max_reserved_bytes=reserved,
                           states_allocated_bytes=states, host_forward_ms=f"{host[0]:.3f}",
                           host_backward_ms=f"{host[1]:.3f}", host_optimizer_ms=f"{host[2]:.3f}")
                row.update(phase_memory(live["model"], live["opt"], ids))
                if traced:
                    fname = f"{name}-mb{mb}-s{seq}-{recompute}-{attention}.trace.json.gz"
                    row["gpu_kernels"] = trace_one(live["model"], live["opt"], ids, os.path.join(args.out, fname))
                    row["trace"] = fname
                del ids
            except torch.OutOfMemoryError:
                row["status"] = "oom"
                live.clear()
            except Exception as exc:  # noqa: BLE001 - one failed point must not lose the others
                row["status"] = "error: " + str(exc).replace("\t", " ").replace("\n", " ")[:200]
                traceback.print_exc()
                live.clear()
        tsv.write("\t".join(str(row[c]) for c in COLUMNS) + "\n")
        tsv.flush()
        print(f"{time.time() - t0:6.1f}s", "\t".join(str(row[c]) for c in COLUMNS), flush=True)
    tsv.close()
    with open(os.path.join(args.out, "environment.json"), "w") as f:
        json.dump(env, f, indent=1)
    print(f"done in {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
