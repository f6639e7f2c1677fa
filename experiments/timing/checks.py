"""The timing experiment's checks, each readable alone: the machine's copy bandwidth (the
fastest copy into an existing buffer, with each copy's page faults), the eager cost of a custom
rule taken apart, torch.relu's step with new against existing outputs, the compiled-torch
reproducer, and the harness's checks of itself (torch.utils.benchmark.Timer, the shared dynamic
compile wrapper). experiments.timing.measure times the rules and runs these as parts of its
cases; the fresh-process check stays there, since it alternates with the rules' own rounds.
"""
import resource

import jax
import numpy as np
import torch
from jax import lax

from experiments.timing import harness as timing
from experiments.timing import inductor_bool_mask
from experiments.timing.harness import inputs, interleaved, jax_sync, rule_thunks, timed, torch_sync
from study.measure.rule import REFERENCE_RELU
from study.measure.rules import by_key
from study.workloads.timing import quartiles

# --- the eager cost taken apart -------------------------------------------------------------

class ReLUOverBuiltinKernels(torch.autograd.Function):
    """torch.relu's own kernels behind autograd.Function: forward torch.relu, backward
    aten.threshold_backward on the saved output, as torch.relu's derivative formula does. Its
    step over the built-in's is what autograd.Function itself costs."""

    @staticmethod
    def forward(ctx, x):
        y = torch.relu(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return torch.ops.aten.threshold_backward(grad, y, 0)


def _jax_relu_backward(x, g):
    return lax.select(x > 0, g, lax.full_like(g, 0))  # jax.nn.relu's own jvp rule, transposed


@jax.custom_vjp
def jax_relu_over_builtin_ops(x):
    return jax.nn.relu(x)


jax_relu_over_builtin_ops.defvjp(lambda x: (jax.nn.relu(x), x),
                                 lambda x, g: (_jax_relu_backward(x, g),))
OVER_BUILTIN = {"torch": ("autograd.Function over torch.relu's kernels",
                          ReLUOverBuiltinKernels.apply),
                "jax": ("custom_vjp over jax.nn.relu's ops", jax_relu_over_builtin_ops)}


class _Context:
    """autograd's ctx, for calling a Function's forward and backward directly."""

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


def _torch_pieces(fn, x, g):
    """(forward body, backward body) thunks of a rule written as autograd.Function, called
    directly (no autograd), or None for another kind of rule."""
    cls = getattr(fn, "__self__", None)
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        return None
    modern = cls.setup_context is not torch.autograd.Function.setup_context
    ctx = _Context()

    def forward():
        if not modern:
            return cls.forward(ctx, x)
        y = cls.forward(x)
        cls.setup_context(ctx, (x,), y)
        return y
    with torch.no_grad():
        forward()
    return forward, lambda: cls.backward(ctx, g)


def _jax_pieces(fn, x, g):
    """(forward body, backward body) of a custom_vjp rule, op by op, or None."""
    if not isinstance(fn, jax.custom_vjp):
        return None
    residual = fn.fwd(x)[1]
    return (lambda: fn.fwd(x)), (lambda: fn.bwd(residual, g))


def grad_step(framework: str, fn, x, g):
    if framework == "torch":
        return lambda: torch.autograd.grad(fn(x), x, g)[0]
    return lambda: jax.vjp(fn, x)[1](g)[0]


def _builtin_pieces(framework: str, x, g):
    """(forward, backward) of the built-in: its own kernels, called directly."""
    if framework == "torch":
        y = torch.relu(x)
        return (lambda: torch.relu(x)), (lambda: torch.ops.aten.threshold_backward(g, y, 0))
    return (lambda: jax.nn.relu(x)), (lambda: _jax_relu_backward(x, g))


# --- the machine's limits: copies into existing and new buffers, the matmul rate ----------

def with_faults(timings: dict) -> dict:
    """Each timing with its minor page faults a call: the median over its timed calls (a
    fresh output buffer the allocator takes from the kernel faults once a page when first
    written; study.workloads.timing counts each call's faults outside the timed window)."""
    return {k: {**t, "minor_faults_per_call": float(np.median(t["minor_faults"]))}
            for k, t in timings.items()}


def copy_thunks(device, n: int) -> dict:
    """{(what, into): (thunk, sync)}: n float32 elements copied by numpy, torch and JAX, each
    into a buffer that already exists and into a new one. JAX writes into an existing buffer
    only by donating it: the copy's result is the next call's destination."""
    x_np = inputs(n)[0]
    out_np = np.empty_like(x_np)
    xt, out_t = device.to_torch(x_np), device.to_torch(np.empty_like(x_np))
    xj = device.to_jax(x_np)
    into_j = jax.jit(lambda src, dst: dst.at[:].set(src), donate_argnums=1)
    new_j = jax.jit(lambda a: a + 0.0)  # x + 0.0 is no no-op: read n, write n
    held = {"dst": device.to_jax(np.zeros_like(x_np))}

    def donated():
        held["dst"] = into_j(xj, held["dst"])
        return held["dst"]
    out = {("copy torch", "preallocated"): (lambda: out_t.copy_(xt), torch_sync(device)),
           ("copy torch", "new buffer"): (lambda: xt.clone(), torch_sync(device)),
           ("copy jax", "preallocated"): (donated, jax_sync),
           ("copy jax", "new buffer"): (lambda: new_j(xj), jax_sync)}
    if device.name == "cpu":  # numpy's copy is a host copy
        out |= {("copy numpy", "preallocated"): (lambda: np.copyto(out_np, x_np) or out_np,
                                                    lambda _: None),
                ("copy numpy", "new buffer"): (lambda: x_np.copy(), lambda _: None)}
    return out


def machine_limits(base: dict, device, n: int, matmul: bool) -> list[dict]:
    """Copy bandwidth at n elements (a fraction of it compares like with like only at the same
    n: 10^6 floats sit in cache where 10^7 do not): numpy, torch and JAX, each into an
    existing buffer and into a new one, interleaved, with the page faults each call takes.
    The machine's copy bandwidth is the best copy into an existing buffer. Where asked, the
    matmul rate."""
    thunks = copy_thunks(device, n)
    timings = with_faults(interleaved(thunks, timing.CHECK_BUDGET_S))
    records = [{**base, "what": what, "into": into, "bytes": 2 * 4 * n,
                "page_bytes": resource.getpagesize(),
                "stats": quartiles(t["times_s"]), "budget_s": timing.CHECK_BUDGET_S, **t}
               for (what, into), t in timings.items()]
    if not matmul:
        return records
    m = 1024 if n >= 10 ** 6 else 128  # large enough to reach the machine's matmul rate
    a_np = np.random.default_rng(timing.SEED).standard_normal((m, m)).astype(np.float32)
    at, aj = device.to_torch(a_np), device.to_jax(a_np)
    mm_j = jax.jit(lambda a: a @ a)
    return records + [{**base, "what": "matmul torch", "flops": 2 * m ** 3,
                       **timed(lambda: at @ at, torch_sync(device))},
                      {**base, "what": "matmul jax", "flops": 2 * m ** 3,
                       **timed(lambda: mm_j(aj), jax_sync)}]


def eager_part_thunks(framework: str, n: int, device, rules) -> dict:
    """{(rule, piece): (thunk, sync)}: the step (forward plus backward), the forward body
    alone and the backward body alone of the built-in, of the built-in's own kernels behind
    the framework's custom-rule API, and of each custom rule whose body can be called alone;
    the backward body also on the same values sorted (every sign in one run), the one change
    that shows whether its time depends on the pattern of signs."""
    x_np, g_np = inputs(n)
    sync = torch_sync(device) if framework == "torch" else jax_sync
    if framework == "torch":
        xg, g = device.to_torch(x_np, requires_grad=True), device.to_torch(g_np)
        xs = {"random": xg.detach(), "sorted": device.to_torch(np.sort(x_np))}
        pieces_of = _torch_pieces
    else:
        xg, g = device.to_jax(x_np), device.to_jax(g_np)
        xs = {"random": xg, "sorted": device.to_jax(np.sort(x_np))}
        pieces_of = _jax_pieces
    ref = REFERENCE_RELU[framework].key
    label, over = OVER_BUILTIN[framework]
    fns = {ref: by_key(ref).fn, label: over} | {
        r.key: r.fn for r in rules if r.key != ref and pieces_of(r.fn, xs["random"], g)}
    out = {}
    for rule, fn in fns.items():
        pieces = {s: _builtin_pieces(framework, x, g) if rule == ref else pieces_of(fn, x, g)
                  for s, x in xs.items()}
        out[(rule, "step")] = grad_step(framework, fn, xg, g), sync
        out[(rule, "forward")] = pieces["random"][0], sync
        out[(rule, "backward")] = pieces["random"][1], sync
        out[(rule, "backward, sorted signs")] = pieces["sorted"][1], sync
    return out


def eager_parts_records(base: dict, device, framework: str, n: int, rules, processes: int = 1,
                        block: int = 0, blocks: int = 1, worker: int = 0
                        ) -> list[dict]:
    thunks = eager_part_thunks(framework, n, device, rules)
    timings = with_faults(interleaved(thunks, timing.CHECK_BUDGET_S, processes))
    names = {r.key: r.name for r in rules}
    return [{**base, "rule": rule, "name": names.get(rule, rule), "piece": piece,
             "reference": REFERENCE_RELU[framework].key, "over_builtin": OVER_BUILTIN[framework][0],
             "stats": quartiles(t["times_s"]), "budget_s": timing.CHECK_BUDGET_S, **t}
            for (rule, piece), t in timings.items()]


# --- the page-fault check: fresh outputs against preallocated ones --------------------------

def page_fault_thunks(device, n: int) -> dict:
    """torch.relu's step three ways on n elements: through autograd (fresh outputs), its two
    kernels called directly (fresh outputs, no autograd), and the same kernels writing into
    buffers that already exist (out= variants)."""
    x_np, g_np = inputs(n)
    xg, g = device.to_torch(x_np, requires_grad=True), device.to_torch(g_np)
    x = xg.detach()
    y, dx = torch.empty_like(x), torch.empty_like(x)
    sync = torch_sync(device)

    def kernels():
        return torch.ops.aten.threshold_backward(g, torch.clamp_min(x, 0), 0)

    def into():
        torch.clamp_min(x, 0, out=y)
        return torch.ops.aten.threshold_backward.grad_input(g, y, 0, grad_input=dx)
    return {"torch.relu step (autograd, new outputs)":
                (grad_step("torch", torch.relu, xg, g), sync),
            "its kernels, new outputs": (kernels, sync),
            "its kernels, into existing outputs": (into, sync)}


def page_fault_records(base: dict, device, n: int, processes: int = 1) -> list[dict]:
    thunks = page_fault_thunks(device, n)
    timings = with_faults(interleaved(thunks, timing.CHECK_BUDGET_S, processes))
    return [{**base, "way": way, "stats": quartiles(t["times_s"]),
             "budget_s": timing.CHECK_BUDGET_S, **t}
            for way, t in timings.items()]


# each round a median of our repeats (at least MIN_ROUNDS, for CHECK_BUDGET_S) and one of the
# Timer's blocked_autorange, which runs blocks for at least timer_min_run_s
CROSS_CHECK = {"rounds": timing.MIN_ROUNDS, "timer_min_run_s": 0.1}


def cross_check(base: dict, device, n: int) -> list[dict]:
    """Our harness and torch.utils.benchmark.Timer on the same thunk, alternated round by
    round so that the machine's drift hits both alike."""
    import torch.utils.benchmark as benchmark
    key = REFERENCE_RELU["torch"].key
    made = rule_thunks("torch", "eager", [by_key(key)], n, device)[key]
    thunk, sync = made.call, made.sync
    ours, theirs = [], []
    rounds = CROSS_CHECK["rounds"]
    for _ in range(rounds):
        ours.append(timed(thunk, sync, budget_s=timing.CHECK_BUDGET_S)["stats"]["median"])
        timer = benchmark.Timer(stmt="thunk(); sync(None)",
                                globals={"thunk": thunk, "sync": sync},
                                num_threads=torch.get_num_threads())
        with torch.device("cpu"):  # the Timer's own statistics are host bookkeeping
            theirs.append(timer.blocked_autorange(min_run_time=CROSS_CHECK["timer_min_run_s"])
                          .median)
    return [{**base, "ours_s": ours, "timer_s": theirs, "rounds": rounds,
             "timer_num_threads": torch.get_num_threads()}]


def probe_records(base: dict, device, n: int, processes: int = 1, block: int = 0,
                  blocks: int = 1, worker: int = 0) -> list[dict]:
    """The reproducer's ops (experiments/inductor_bool_mask.py), each alone and the rule's
    whole step, eager and compiled with and without inductor's vector code, on random and on
    sorted signs, interleaved; each compiled record keeps its kernels' store and load lines."""
    torch._dynamo.reset()
    calls, code = inductor_bool_mask.thunks(n, device.name)
    roles, ways = inductor_bool_mask.roles(), inductor_bool_mask.compile_options(device.name)
    timings = with_faults(interleaved({k: (call, torch_sync(device)) for k, call in calls.items()},
                                      timing.CHECK_BUDGET_S, processes))
    return [{**base, "probe": name, "mode": way, "signs": signs, "role": roles[name][1],
             "bytes_per_element": roles[name][0], "compiled": way in ways,
             "simdlen": (ways.get(way) or {}).get("cpp.simdlen"),  # None: inductor's own
             "stats": quartiles(t["times_s"]), **t, **({"kernel_lines": code[(name, way)]}
                                         if (name, way) in code else {})}
            for (name, way, signs), t in timings.items()]


def shared_dynamic_records(base: dict, device, rule, n: int) -> list[dict]:
    """The harness before per-size compilation, against it: one torch.compile(dynamic=True)
    wrapper first called at 8 elements, then timed at n, interleaved with the same rule
    compiled for n alone (dynamic=False). Inductor picks a kernel's code from the sizes it
    first sees (its size hints), so the shared wrapper runs code chosen for 8 elements."""
    torch._dynamo.reset()
    fn = rule.fn
    shared = torch.compile(fn, dynamic=True)
    small = device.to_torch(inputs(8)[0], requires_grad=True)
    torch.autograd.grad(shared(small), small, device.to_torch(inputs(8)[1]))
    x_np, g_np = inputs(n)
    x, g = device.to_torch(x_np, requires_grad=True), device.to_torch(g_np)
    per_size = torch.compile(fn, dynamic=False)
    thunks = {"shared dynamic, first called at 8": (
                  (lambda: torch.autograd.grad(shared(x), x, g)[0]), torch_sync(device)),
              "compiled for this size": (
                  (lambda: torch.autograd.grad(per_size(x), x, g)[0]), torch_sync(device))}
    timings = interleaved(thunks)
    return [{**base, "framework": "torch", "mode": "compile", "name": rule.name,
             "ways": {way: {"stats": quartiles(t["times_s"]), "first_call_s": t["first_call_s"],
                            "times_s": t["times_s"]}
                      for way, t in timings.items()}}]
