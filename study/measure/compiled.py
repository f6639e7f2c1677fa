"""The probe's compiled half: torch.compile (inductor, fullgraph) and jax.jit, at the kinks.
Callers measure through study.measure.probe.measure_compiled.

Two compiled passes, as a user runs them: a training step (the compiled forward on inputs that
require grad, then its compiled backward: "value" and "reverse") and forward mode (jvp inside
the compiled function: "forward"). Compiling costs about a second a graph with inductor on a
small CPU, so the ops of one framework are compiled together, one graph per pass, each op
reading its own input tensor (no op sees another's values, so none changes another's result).
A graph that fails is split in halves until each failure is one op's own. A custom backend
counts the graphs inductor compiled: a call that compiled nothing is an error, never eager
numbers under a compiled label.
"""
from study.compare.cells import Error
from study.errors import first_error_line
from study.measure.devices import Device
from study.measure.inputs import torch_dtype
from study.measure.placement import placed_arrays, read_placed
from study.measure.rule import Rule

PASSES = {"train": ("value", "reverse"), "forward": ("forward",)}
COMPILED_MODES = tuple(m for modes in PASSES.values() for m in modes)


class NotCompiled(RuntimeError):
    """torch.compile returned without inductor compiling a graph."""


def _counting_inductor(graphs: list):
    from torch._inductor.compile_fx import compile_fx  # what backend="inductor" calls

    def backend(gm, example_inputs):
        graphs.append(len(gm.graph.nodes))
        return compile_fx(gm, example_inputs)
    return backend


def _torch_batch(fns, compiled_pass: str):
    """call(arrays) -> per op, the pass's outputs (a tuple in PASSES order)."""
    import torch
    graphs: list = []
    if compiled_pass == "forward":
        def body(*xs):
            return [torch.func.jvp(f, (x,), (torch.ones_like(x),))[1] for f, x in zip(fns, xs)]
    else:
        def body(*xs):
            return [f(x) for f, x in zip(fns, xs)]
    torch._dynamo.reset()  # each graph starts from an empty cache: no cache limit is reached
    compiled = torch.compile(body, backend=_counting_inductor(graphs), fullgraph=True)

    def call(arrays, dtype: str, device: Device):
        train = compiled_pass == "train"
        xs = [device.to_torch(a, requires_grad=train, dtype=torch_dtype(dtype)) for a in arrays]
        outs = compiled(*xs)
        if not graphs:
            raise NotCompiled("torch.compile compiled no graph")
        if not train:
            return [(o,) for o in outs]
        live = [o for o in outs if o.requires_grad]
        torch.autograd.backward(live, [torch.ones_like(o) for o in live])
        return [(o.detach(), torch.zeros_like(x) if x.grad is None else x.grad)
                for o, x in zip(outs, xs)]
    return call


def _jax_batch(fns, compiled_pass: str):
    import jax
    import jax.numpy as jnp

    def train(f, x):
        y, pullback = jax.vjp(f, x)
        return y, pullback(jnp.ones_like(y))[0]

    def forward(f, x):
        return (jax.jvp(f, (x,), (jnp.ones_like(x),))[1],)
    each = train if compiled_pass == "train" else forward
    compiled = jax.jit(lambda xs: [each(f, x) for f, x in zip(fns, xs)])

    def call(arrays, dtype: str, device: Device):
        return compiled([device.to_jax(a) for a in arrays])
    return call


def _run_calls(batch, per_op_arrays: list[list], dtype: str, device: Device) -> list[list]:
    """Call the compiled batch once per position in the longest list of arrays (an op with
    fewer repeats its last); per op, its outputs for its own arrays, on the host."""
    calls = max(len(a) for a in per_op_arrays)
    outputs: list[list] = [[] for _ in per_op_arrays]
    for j in range(calls):
        outs = batch([a[min(j, len(a) - 1)] for a in per_op_arrays], dtype, device)
        for k, out in enumerate(outs):
            if j < len(per_op_arrays[k]):
                outputs[k].append(tuple(device.to_host(o) for o in out))
    return outputs


def _in_groups(make, fns, arrays, dtype: str, device: Device) -> list[tuple[list, int]]:
    """Per op: (its outputs per array, or an error line; how many ops its graph held). A
    graph that fails is split in halves, so that an error is reported by the op alone."""
    try:
        return [(r, len(fns)) for r in _run_calls(make(fns), arrays, dtype, device)]
    except Exception as exc:  # noqa: BLE001  a failure is a measured outcome, once it is one op's
        if len(fns) == 1:
            return [(Error(first_error_line(exc)), 1)]
    half = len(fns) // 2
    return (_in_groups(make, fns[:half], arrays[:half], dtype, device)
            + _in_groups(make, fns[half:], arrays[half:], dtype, device))


def compiled_outcomes(rules: list[Rule], values: list[list[float]], dtype: str, device: Device,
                      placements: tuple[str, ...], passes: tuple[str, ...] = tuple(PASSES)
                      ) -> list[dict]:
    """Per rule (all of one framework): {"outcome": {mode: {placement: [per input: a Value
    per position, or an Error]}}, "graph_ops": {mode: how many ops shared the op's compiled
    graph}}, for the compiled passes asked for (PASSES: "train" and "forward")."""
    framework = rules[0].framework
    batch = _torch_batch if framework == "torch" else _jax_batch
    modes_measured = [m for p in passes for m in PASSES[p]]
    out = [{"outcome": {m: {} for m in modes_measured}, "graph_ops": {}} for _ in rules]
    for compiled_pass in passes:
        modes = PASSES[compiled_pass]
        for placement in placements:
            arrays = [placed_arrays(placement, v, dtype) for v in values]
            got = _in_groups(lambda fns: batch(fns, compiled_pass), [r.fn for r in rules],
                             arrays, dtype, device)
            for k, ((results, size), v) in enumerate(zip(got, values)):
                for i, mode in enumerate(modes):
                    per_call = ([results] * len(arrays[k]) if isinstance(results, Error)
                                else [r[i] for r in results])
                    out[k]["outcome"][mode][placement] = read_placed(placement, per_call, len(v))
                    out[k]["graph_ops"][mode] = size
    return out
