"""Grouping a cell that differs between CPU and GPU: hand-made cells, one per group."""
from study.compare.cells import Error, Placed, Value
from study.compare.device_comparison import group_of


def cell(**fields):
    return tuple(fields.items()) + (("path", "value"),)


def test_each_differing_cell_lands_in_the_group_its_name_and_values_show():
    f32 = cell(op="relu", input="0", dtype="float32")
    # an input named min_subnormal, or a value below float32's smallest normal 2^-126
    one = Value(1.0)
    assert group_of(cell(op="relu", input="-min_subnormal", dtype="float32"), one, Value(0.0)) \
        == "subnormal"
    assert group_of(f32, Value(2.0 ** -130), Value(0.0)) == "subnormal"
    placed = Placed((Value(0.0), Value(1.0)), (("fill", ((0, "0-63"),)), ("0-d", ((1, "0"),))))
    assert group_of(f32, placed, one) == "placement"
    # one unit in the last place of float32 at 1 is 2^-23: within the 4 ulps of "last bits"
    assert group_of(f32, one, Value(1.0 + 2.0 ** -23)) == "last bits"
    assert group_of(f32, one, Value(1.0 + 2.0 ** -20)) == "other"  # 8 ulps apart
    assert group_of(f32, Error("TypeError: grad requires real- or complex-valued inputs"), one) \
        == "error"
    # a label is a Value whatever it reads like: only a cell typed as an Error is one
    assert group_of(f32, Value("TypeError: looks like one"), one) == "other"
    assert group_of(f32, Value("a label"), Value("another")) == "other"


# --- which cpu run is on a cuda run's host ------------------------------------------------------
# Two GPU hosts alike but for their GPU, as measured: the CPU run C5 and G1 on the H100 host on
# 2026-11-23 by commit 9aa9177, G3 on the H200 host on 2026-11-27 by 0eaa931; every VM is "vm".
XEON = {"host": "vm", "cpu": "Intel(R) Xeon(R) Processor", "cpu_count": 16,
        "torch_cpu_capability": "AVX512", "torch": "2.11.0+cu130", "jax": "0.11.2",
        "scope": "standard"}
C5 = {**XEON, "device": "cpu", "gpu": None, "git_commit": "9aa9177",
      "utc": "2026-11-23T09:03:30+00:00"}
G1 = {**XEON, "device": "cuda", "gpu": {"name": "NVIDIA H100 80GB HBM3"},
      "git_commit": "9aa9177", "utc": "2026-11-23T08:18:26+00:00"}
G3 = {**XEON, "device": "cuda", "gpu": {"name": "NVIDIA H200"}, "git_commit": "0eaa931",
      "utc": "2026-11-27T00:57:45+00:00"}


def run_of(p, experiment="zero_point"):
    from study.runs.results import Run
    return Run.of(experiment, p, [{"op": "relu", "v": 1.0}],
                  f"results/{experiment}/{p['utc']}.json")


def test_a_cpu_run_is_on_a_cuda_runs_host_only_where_its_host_gpu_or_its_session_says_so():
    from study.compare.device_comparison import host_gpu, one_host
    c5, g1, g3 = run_of(C5), run_of(G1), run_of(G3)
    # C5 recorded no host GPU: it shares G1's commit and day, not G3's, though its CPU identity
    # matches both (the bug: G3 was paired with C5 as "one machine")
    assert one_host(c5, g1) and not one_host(c5, g3)
    assert host_gpu(c5, [c5, g1, g3]) == "NVIDIA H100 80GB HBM3"
    # a cpu run that records its host's GPU is judged by it, whatever the session
    on_h200 = run_of({**C5, "host_gpu": "NVIDIA H200", "git_commit": "0eaa931"})
    assert one_host(on_h200, g3) and not one_host(on_h200, g1)
    late = run_of({**C5, "host_gpu": "NVIDIA H200", "utc": "2026-12-01T00:00:00+00:00"})
    assert one_host(late, g3)
    # another CPU model or core count is another host
    assert not one_host(run_of({**C5, "cpu_count": 2}), g1)


def test_a_cuda_run_without_a_cpu_run_on_its_host_has_no_cpu_partner():
    from study.compare.device_comparison import pairs
    from types import SimpleNamespace
    from study.runs.experiment import Comparison
    exp = SimpleNamespace(name="zero_point", comparison=Comparison(record_key=("op",)),
                          across_devices=True)
    found = pairs([run_of(C5), run_of(G1), run_of(G3)], [exp])
    assert [(p.cpu.provenance["utc"], p.cuda.provenance["gpu"]["name"]) for p in found] == [
        (C5["utc"], "NVIDIA H100 80GB HBM3")]


def test_a_cpu_run_on_a_gpu_host_is_another_machine_than_one_on_another_gpu_host():
    # a cpu run on the H200 host once shared C5's identity, and so its file name and label
    from study.runs.results import identity, run_name
    on_h100 = {**C5, "host_gpu": "NVIDIA H100 80GB HBM3"}
    on_h200 = {**C5, "host_gpu": "NVIDIA H200"}
    assert identity(on_h100) != identity(on_h200)
    assert run_name(on_h100) != run_name(on_h200)
    assert identity(C5) == identity({**C5, "host_gpu": None})  # older files keep their labels
