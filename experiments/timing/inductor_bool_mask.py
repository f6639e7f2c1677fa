"""A reproducer small enough to hand upstream: torch.compile of ReLU on a CPU, op by op.

    python -m experiments.inductor_bool_mask [n]     # torch only; prints median µs per case

Inductor lowers relu's forward plus backward to two kernels: the forward writes y and a
bool mask (x <= 0), the backward reads the mask and g and writes dx. Each op below is one
of those pieces alone, or the whole step, run three ways: eager, compiled as usual, and
compiled with inductor's C++ vector code off (cpp.simdlen=0: the one change between the two
compiled ways), each on random signs and on the same values sorted (every sign in one run,
so a data-dependent branch is always predicted). The timing experiment times the same thunks
with its harness (its probes part) and keeps the generated store and load lines.
"""
import re
import sys
import time

import torch

N = 10 ** 6
# op: (function, its inputs, bytes an element it must read plus write, its role in the step)
OPS = {"x <= 0 (writes bool)": (lambda x: x <= 0, ("x",), 5, "bool store"),
       "(x <= 0).to(torch.uint8) (writes uint8)": (lambda x: (x <= 0).to(torch.uint8), ("x",), 5,
                                                   "uint8 store"),
       "(x <= 0).float() (writes float32)": (lambda x: (x <= 0).float(), ("x",), 8,
                                             "float32 store"),
       "torch.where(m, 0, g) (reads a bool mask)": (lambda m, g: torch.where(m, 0.0, g),
                                                     ("m", "g"), 9, "bool mask read")}
STEP = "torch.relu forward plus backward"
STEP_BYTES = 12  # read x and g, write dx
SIGNS = ("random", "sorted")


def compile_options(device: str) -> dict[str, dict]:
    """The compiled ways: as usual and, where inductor writes C++ (a CPU), without its vector
    code. Each is its own torch.compile, so no reset or config patch can leak between them."""
    return {"compile": {}} | ({"compile, simdlen=0": {"cpp.simdlen": 0}} if device == "cpu" else {})


def inputs(n: int, signs: str, device: str = "cpu", seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=gen)
    if signs == "sorted":
        x = x.sort().values
    x = x.to(device)
    return {"x": x, "m": x <= 0, "g": torch.ones(n, device=device),
            "xg": x.clone().requires_grad_(True)}


def _step(fn, data):
    return lambda: torch.autograd.grad(fn(data["xg"]), data["xg"], data["g"])[0]


def _code_lines(codes: list[str]) -> list[str]:
    """The lines of generated kernels that store to or load from a tensor."""
    return [ln.strip() for code in codes for ln in code.splitlines()
            if re.search(r"\.store\(|::from\(|::loadu\(|out_ptr\d+\[|in_ptr\d+\[", ln)]


def roles() -> dict[str, tuple[int, str]]:
    """{op: (bytes an element, role)}, the whole step included."""
    return {name: (b, role) for name, (_, _, b, role) in OPS.items()} | {STEP: (STEP_BYTES, "step")}


def thunks(n: int = N, device: str = "cpu") -> tuple[dict, dict]:
    """({(op, way, signs): thunk}, {(op, way): kernel store and load lines}) for every op (and
    the whole step), way (eager or compiled) and sign pattern. Compiling happens here, on the
    random-sign inputs."""
    from torch._inductor.utils import run_and_get_code
    data = {s: inputs(n, s, device) for s in SIGNS}
    ops = {name: (op, args) for name, (op, args, *_) in OPS.items()}
    out, code = {}, {}
    for name, (op, args) in ops.items():
        for s in SIGNS:
            out[(name, "eager", s)] = (lambda op=op, a=tuple(data[s][k] for k in args): op(*a))
        for way, options in compile_options(device).items():
            compiled = torch.compile(op, dynamic=False, options=options)
            _, codes = run_and_get_code(compiled, *(data["random"][k] for k in args))
            code[(name, way)] = _code_lines(codes)
            for s in SIGNS:
                out[(name, way, s)] = (lambda f=compiled, a=tuple(data[s][k] for k in args): f(*a))
    for s in SIGNS:
        out[(STEP, "eager", s)] = _step(torch.relu, data[s])
    for way, options in compile_options(device).items():
        compiled = torch.compile(torch.relu, dynamic=False, options=options)
        _, codes = run_and_get_code(_step(compiled, data["random"]))
        code[(STEP, way)] = _code_lines(codes)
        for s in SIGNS:
            out[(STEP, way, s)] = _step(compiled, data[s])
    return out, code


def main(argv: list[str]) -> None:
    n = int(argv[0]) if argv else N
    calls, _ = thunks(n)
    times: dict = {k: [] for k in calls}
    for _ in range(3):
        for f in calls.values():
            f()
    for _ in range(30):  # round by round, so that drift hits every case alike
        for k, f in calls.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    print(f"torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}, "
          f"{torch.get_num_threads()} threads, n = {n}: median µs of 30 calls")
    for (name, way, signs), ts in times.items():
        print(f"{name:45s} {way:20s} {signs:7s} {sorted(ts)[len(ts) // 2] * 1e6:10.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
