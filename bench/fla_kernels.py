"""Per-kernel GPU times of fla's delta-rule ops (forward + backward), for the per-kernel budget of linac's design.

fla is not part of linac: copy its `fla` package into third_party/fla (ignored by git) and carry it to the device
machine (bench/fla_side_by_side.py says how). Runs each op's forward + backward at linac's benchmark shape (bf16,
B=8 T=4096 H=16 K=V=128), warm-up first (Triton compiles then), then `iters` profiled steps under torch.profiler,
and prints each CUDA kernel's mean time a step, largest first, and the step's sum.

Usage: python3 bench/fla_kernels.py [op ...]   (ops: chunk_delta_rule, chunk_gated_delta_rule; default both)
"""
import sys
import time
from collections import defaultdict

sys.path.insert(0, "third_party")

import torch

B, T, H, D = 8, 4096, 16, 128


def profile(name, make, run, iters=5):
    torch.manual_seed(0)
    args = make()
    start = time.time()

    def step():
        out = run(*args)
        out.backward(torch.ones_like(out))

    try:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    except Exception as e:  # some fla backward kernels refuse older Triton on Hopper
        print(f"{name}: forward + backward failed: {type(e).__name__}: {str(e)[:160]}", flush=True)
        return
    compiled = time.time() - start
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    times = defaultdict(float)
    counts = defaultdict(int)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            times[ev.name] += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
            counts[ev.name] += 1
    if not times:  # a torch whose profiler does not list device kernels as events: its own table instead
        print(f"== {name}: no device kernel events; torch's table of {iters} steps:")
        print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=20))
        return
    total = sum(times.values()) / iters
    print(f"== {name}: {total / 1000:.3f} ms of kernels a forward + backward step ({compiled:.0f} s warm-up)")
    for k, t in sorted(times.items(), key=lambda kv: -kv[1]):
        if t / iters < 5:  # under 5 us a step
            continue
        print(f"  {t / iters / 1000:8.3f} ms  x{counts[k] // iters:<2d} {k[:110]}")


def main():
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    from fla.ops.delta_rule import chunk_delta_rule

    dev, dt = "cuda", torch.bfloat16
    rnd = lambda *s: torch.randn(*s, device=dev, dtype=dt, requires_grad=True)
    gate = lambda *s: torch.nn.functional.logsigmoid(torch.randn(*s, device=dev, dtype=torch.float32)).requires_grad_()
    unit = lambda *s: torch.nn.functional.normalize(torch.randn(*s, device=dev, dtype=torch.float32), dim=-1).to(dt).requires_grad_()
    beta = lambda *s: torch.rand(*s, device=dev, dtype=dt).requires_grad_()
    ops = {
        "chunk_delta_rule": (lambda: (rnd(B, T, H, D), unit(B, T, H, D), rnd(B, T, H, D), beta(B, T, H)),
                             lambda q, k, v, b: chunk_delta_rule(q, k, v, b)[0]),
        "chunk_gated_delta_rule": (lambda: (rnd(B, T, H, D), unit(B, T, H, D), rnd(B, T, H, D), gate(B, T, H), beta(B, T, H)),
                                   lambda q, k, v, g, b: chunk_gated_delta_rule(q, k, v, g, b)[0]),
    }
    for name in sys.argv[1:] or list(ops):
        profile(name, *ops[name])


if __name__ == "__main__":
    main()
