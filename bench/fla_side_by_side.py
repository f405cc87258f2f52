"""Times fla's Triton kernels at linac's benchmark shape, for side-by-side tables.

fla is not part of linac: fetch it into third_party/fla (ignored by git) and carry
it to the device machine. Prints one line per op: forward ms and forward+backward ms
(median of triton.testing.do_bench), bf16, B=8 T=4096 H=16 K=V=128.

Arguments name the ops to time (default: all four, in the order below). On a fresh machine Triton compiles and
autotunes each op on its first call, minutes for chunk_simple_gla and chunk_gla (bench/NOTES.md v32): give the
script a device call of its own, or point TRITON_CACHE_DIR at a folder carried from an earlier call.
"""
import sys
import time

sys.path.insert(0, "third_party")

import torch
import triton

B, T, H, D = 8, 4096, 16, 128


def bench(name, make, run):
    start = time.time()
    torch.manual_seed(0)
    args = make()
    fwd = triton.testing.do_bench(lambda: run(*args), return_mode="median")
    def fwd_bwd():
        out = run(*args)
        out.backward(torch.ones_like(out))
    try:
        both = triton.testing.do_bench(fwd_bwd, return_mode="median")
    except Exception as e:  # fla refuses some gated backward kernels on Hopper with Triton < 3.7.1
        both = float("nan")
        print(f"{name}: backward failed: {type(e).__name__}: {str(e)[:120]}", flush=True)
    print(f"{name:28s} fwd {fwd:8.3f} ms   fwd+bwd {both:8.3f} ms   ({time.time() - start:.0f} s with compilation)",
          flush=True)


def main():
    try:
        import einops  # noqa: F401
    except ImportError:
        print("fla needs einops, which this machine lacks; no fla timings")
        return
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    from fla.ops.gla import chunk_gla
    from fla.ops.simple_gla import chunk_simple_gla
    from fla.ops.delta_rule import chunk_delta_rule

    dev, dt = "cuda", torch.bfloat16
    rnd = lambda *s: torch.randn(*s, device=dev, dtype=dt, requires_grad=True)
    gate = lambda *s: torch.nn.functional.logsigmoid(torch.randn(*s, device=dev, dtype=torch.float32)).requires_grad_()
    unit = lambda *s: torch.nn.functional.normalize(torch.randn(*s, device=dev, dtype=torch.float32), dim=-1).to(dt).requires_grad_()
    beta = lambda *s: torch.rand(*s, device=dev, dtype=dt).requires_grad_()

    ops = [
        ("chunk_gated_delta_rule", lambda: (rnd(B, T, H, D), unit(B, T, H, D), rnd(B, T, H, D), gate(B, T, H), beta(B, T, H)),
         lambda q, k, v, g, b: chunk_gated_delta_rule(q, k, v, g, b)[0]),
        ("chunk_delta_rule", lambda: (rnd(B, T, H, D), unit(B, T, H, D), rnd(B, T, H, D), beta(B, T, H)),
         lambda q, k, v, b: chunk_delta_rule(q, k, v, b)[0]),
        ("chunk_simple_gla", lambda: (rnd(B, T, H, D), rnd(B, T, H, D), rnd(B, T, H, D), gate(B, T, H)),
         lambda q, k, v, g: chunk_simple_gla(q, k, v, g)[0]),
        ("chunk_gla", lambda: (rnd(B, T, H, D), rnd(B, T, H, D), rnd(B, T, H, D), gate(B, T, H, D)),
         lambda q, k, v, g: chunk_gla(q, k, v, g)[0]),
    ]
    wanted, known = set(sys.argv[1:]), {name for name, _, _ in ops}
    if wanted - known:
        print(f"unknown ops {sorted(wanted - known)}; known: {sorted(known)}")
        sys.exit(2)
    for name, make, run in ops:
        if not wanted or name in wanted:
            bench(name, make, run)


if __name__ == "__main__":
    print(torch.cuda.get_device_name(0), "torch", torch.__version__, "triton", triton.__version__, flush=True)
    main()
