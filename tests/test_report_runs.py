"""The run legend and provenance notes, on hand-made provenance: every row and note names its
run and what sets it apart, and a run's identity tells machines apart by their core count."""
from study.report.appendix import _jax_backend, provenance
from study.report.legend import _version_range, glossary, legend
from study.report.runs import (assign_labels, configuration, labelled, older_noted,
                               rows_in_one_order, side_by_side, title)
from study.report.table import frame
from study.runs.results import Run, run_name

C1 = {"utc": "2026-11-24T04:00:00+00:00", "host": "vm", "device": "cpu", "cpu": "AMD EPYC",
      "cpu_count": 2, "torch_cpu_capability": "AVX2", "gpu": None, "torch": "2.13.0+cpu",
      "jax": "0.10.2", "scope": "standard", "git_commit": "f7ddc51", "jax_backend": "cpu",
      "jax_default_backend": "cpu",
      "cuda_absent": "no CUDA device on vm (torch 2.13.0+cpu sees no CUDA device)"}


def run(experiment="two_layer", **changes) -> Run:
    return Run.of(experiment, {**C1, **changes}, [], f"results/{experiment}/x.json")


def legend_rows(runs: list[Run]) -> list[str]:
    runs = labelled(runs, assign_labels(runs, {}))
    lines = "\n".join(legend(runs)).splitlines()
    return [ln for ln in lines if ln.startswith("| ") and not ln.startswith("| run |")]


def glossary_runs(runs: list[Run]) -> str:
    """The glossary's run entry: each label and what sets it apart, in one line."""
    runs = labelled(runs, assign_labels(runs, {}))
    return " ".join(" ".join(glossary(runs)).split()).split("- **seed")[0]


def test_a_copy_of_c1_under_another_host_name_reads_apart_from_it():
    # measured once: C1's files copied under another host name rendered two identical rows
    rows = legend_rows([run(), run(host="lab2", utc="2026-11-25T00:00:00+00:00")])
    assert len(rows) == 2 and rows[0].split("|")[2:] != rows[1].split("|")[2:]
    assert rows[1].startswith("| C2 |") and "lab2: AMD EPYC, 2 cores, AVX2" in rows[1]
    assert "**C2** (host lab2)" in glossary_runs([run(), run(host="lab2",
                                                            utc="2026-11-25T00:00:00+00:00")])


def test_brackets_name_every_difference_from_c1():
    main = labelled([run()], {configuration(run()): "C1"})[0]
    c2 = run(torch_cpu_capability="AVX512", torch="2.11.0+cu130")
    assert title(labelled([c2], {configuration(c2): "C2"})[0], main) == (
        "C2 (AVX512, torch 2.11.0+cu130)")  # it once said "C2 (torch 2.11.0+cu130)" alone
    xeon = run(cpu="Intel(R) Xeon(R) Processor", cpu_count=16, scope="full")
    assert title(labelled([xeon], {configuration(xeon): "C5"})[0], main) == (
        "C5 (Intel(R) Xeon(R) Processor, 16 cores, AVX2, full)")  # another CPU: its kernels said


def test_a_two_core_vm_and_a_sixteen_core_host_are_two_machines():
    # both report CPU model "Intel(R) Xeon(R) Processor": they once shared hash 56a417
    small = {**C1, "cpu": "Intel(R) Xeon(R) Processor", "cpu_count": 2}
    large = {**small, "cpu_count": 16}
    assert run_name(small) != run_name(large)
    labels = assign_labels([run(**small), run(**large)], {})
    assert sorted(labels.values()) == ["C1", "C2"]


def test_a_label_given_before_the_core_count_joined_the_identity_is_kept():
    c1, c3 = run(), run(jax="0.9.2", utc="2026-11-23T22:35:00+00:00")
    older = {"cpu|vm|AMD EPYC|AVX2|None|2.13.0+cpu|0.10.2|standard": "C1",
             "cpu|vm|AMD EPYC|AVX2|None|2.13.0+cpu|0.9.2|standard": "C3"}
    labels = assign_labels([c1, c3], older)
    assert labels == {configuration(c1): "C1", configuration(c3): "C3"}
    # a second machine that shared the older key gets a new label; the first keeps its own
    other = run(cpu_count=16, utc="2026-11-25T00:00:00+00:00")
    assert assign_labels([c1, other], older)[configuration(other)] == "C4"


def test_every_provenance_note_names_its_run():
    runs = [run(), run("zero_point", jax="0.9.2", cuda_absent="no CUDA device on vm (jax 0.9.2)"),
            run("zero_point"), run("timing", device="cuda", gpu={"name": "NVIDIA H100 80GB HBM3"},
                                   cuda_absent=None, jax_backend="gpu", jax_default_backend="gpu")]
    runs = labelled(runs, assign_labels(runs, {}))
    notes = [ln for ln in provenance(runs, []) if ln.startswith("- ")]
    # a settings line per machine and settings (C1 and C2 alike), a no-CUDA line per reason (each
    # run's releases said once, in the table above)
    assert len(notes) == 2 + 2
    assert all(ln.startswith("- **C") or ln.startswith("- **G") for ln in notes), notes
    assert any(ln.startswith("- **C1**: no CUDA device on vm (torch") for ln in notes)


def test_a_cpu_runs_recorded_gpu_backend_is_explained_as_the_hosts_default():
    # C5: provenance written before jax_default_backend existed put the host's default there
    before = {**C1, "jax_backend": "gpu"}
    del before["jax_default_backend"]
    said = _jax_backend(before)
    assert said.startswith("JAX backend gpu as recorded: this host's default") and "(cpu)" in said
    assert _jax_backend({**C1, "jax_default_backend": "gpu"}) == (
        "JAX backend cpu (the host's default: gpu)")
    assert _jax_backend(C1) == "JAX backend cpu"


def test_a_merged_row_names_its_runs_never_all():
    # "all" meant C1, G1 in one table and C1–C6, G1 in another
    long = frame([{"run": "C1", "x": 1.0}, {"run": "G1", "x": 1.0}, {"run": "G1", "x": 2.0}])
    assert side_by_side(long).values.tolist() == [["C1, G1", 1.0], ["G1", 2.0]]


def test_the_reproduction_count_says_experiments_of_which_run():
    # "8 of 8 runs reproduce" meant 8 experiments of C1
    import experiments
    from study.report.document import render
    ref = Run.of("nonscalar_backward", C1, [{"part": "steps", "framework": "torch", "step": "s",
                                             "result": [2.0], "error": None}],
                 "reference/nonscalar_backward/vm.json")
    mine = Run.of("nonscalar_backward", {**C1, "host": "alice",
                                         "utc": "2027-01-01T00:00:00+00:00"},
                  ref.records, "results/nonscalar_backward/alice.json")
    text = render([ref, mine], [], experiments.all_experiments(), [ref], figures=False)
    # the reference is C1, another host: named
    assert "C2: **1 of 1 experiments reproduce** (against C1)" in " ".join(
        text["REPORT.md"].split())


def test_a_release_history_is_one_legend_row_and_two_runs_stay_two():
    # four runs alike but for torch's release (a history) read as one row, releases as versions
    # (2.9.1 before 2.10.0); the other runs keep a row each
    history = [run(torch=v, git_commit="abc1234", utc=f"2026-11-26T0{i}:00:00+00:00")
               for i, v in enumerate(["2.4.1", "2.9.1", "2.10.0", "2.15.0"])]
    rows = legend_rows([run()] + history)
    assert len(rows) == 2
    assert "2.4.1 … 2.15.0 (4 releases)" in rows[1] and rows[1].startswith("| C2–C5 |")
    assert "**C2–C5** (one per torch or JAX release, each listed in the" in glossary_runs(
        [run()] + history)
    pair = legend_rows([run(), *history[:2]])
    assert len(pair) == 3
    # a history run apart from the others' labels (C2; C3 of another CPU; C4–C6) keeps its row,
    # so the rows stay in label order
    other = run(cpu="Intel", utc="2026-11-26T00:30:00+00:00")
    rows = legend_rows([run(), history[0], other, *history[1:]])
    assert [r.split(" | ")[0] for r in rows] == ["| C1", "| C2", "| C3", "| C4–C6"]


def test_a_cpu_run_names_the_gpu_host_it_ran_on_in_the_legend():
    # the H100 host's CPU run (C5) and a CPU run of the H200 host shared every legend column
    xeon = {"cpu": "Intel(R) Xeon(R) Processor", "cpu_count": 16, "torch_cpu_capability": "AVX512"}
    on_h200 = run(**xeon, host_gpu="NVIDIA H200", utc="2026-11-27T00:00:00+00:00")
    on_h100 = run(**xeon, host_gpu="NVIDIA H100 80GB HBM3", utc="2026-11-25T00:00:00+00:00")
    rows = legend_rows([run(), on_h100, on_h200])
    assert "| vm (the H100 host): Intel(R) Xeon(R) Processor, 16 cores, AVX512 |" in rows[1]
    assert "| vm (the H200 host): Intel(R) Xeon(R) Processor, 16 cores, AVX512 |" in rows[2]
    said = glossary_runs([run(), on_h100, on_h200])
    assert "**C2** (the H100 host, " in said and "**C3** (the H200 host, " in said


def test_a_history_run_of_another_python_glibc_or_build_keeps_its_own_row():
    # review 12: the legend merged C26–C44, though C43 and C44 ran Python 3.13.5 and glibc 2.41
    # (the others 3.11.7 and 2.36) with torch 2.13.0+cu130, not +cpu
    env = {"python": "3.11.7", "os": "Linux-6.18-x86_64-with-glibc2.36"}
    history = [run(jax=v, utc=f"2026-11-26T0{i}:00:00+00:00", **env)
               for i, v in enumerate(["0.4.38", "0.5.3", "0.6.2"])]
    newer = [run(jax=v, torch="2.13.0+cu130", python="3.13.5", utc=f"2026-11-26T0{i}:00:00+00:00",
                 os="Linux-6.18-x86_64-with-glibc2.41") for i, v in [(5, "0.11.2"), (6, "0.12")]]
    runs = [run(**env), run("zero_point", **env)] + history + newer  # C1: both experiments
    rows = legend_rows(runs)
    assert [r.split(" | ")[0] for r in rows] == ["| C1", "| C2–C4", "| C5", "| C6"]
    assert "| 0.4.38 … 0.6.2 (3 releases) | 3.11.7, 2.36 |" in rows[1]
    assert "| 2.13.0+cu130 | 0.11.2 | 3.13.5, 2.41 |" in rows[2]
    # the glossary says what sets it apart; its Python and glibc are the legend's column
    assert "**C5** (torch 2.13.0+cu130, jax 0.11.2)" in glossary_runs(runs)
    # builds are not releases: two builds of 2.13.0 and 2.14.1 are 2 releases, 3 builds
    assert _version_range(["2.13.0+cpu", "2.14.1+cu130", "2.13.0+cu130"]) == [
        "2.13.0+cpu … 2.14.1+cu130 (2 releases, 3 builds)"]


def test_a_label_only_a_committed_reference_holds_has_a_legend_row():
    # review 12: the glossary sent C2, a committed reference, to the run legend, which had no
    # row for it
    mine = run()
    ref = run(torch_cpu_capability="AVX512", torch="2.11.0+cu130", utc="2026-11-25T00:00:00+00:00")
    labels = assign_labels([mine, ref], {})
    rows = [ln for ln in "\n".join(legend(labelled([mine], labels), labelled([ref], labels))
                                   ).splitlines() if ln.startswith("| C")]
    assert [r.split(" | ")[0] for r in rows] == ["| C1", "| C2"]
    assert "| 2.11.0+cu130 |" in rows[1] and "| two layer (reference) |" in rows[1]


def test_rows_take_one_order_in_every_run():
    # review 12: Table 22 listed custom_op before the mask rules in C1, after them in C25 and G3
    long = frame([{"run": r, "rule": rule, "s": float(i)} for i, (r, rule) in enumerate(
        [("C1", "relu"), ("C1", "op"), ("C1", "mask"), ("C25", "relu"), ("C25", "mask"),
         ("C25", "op")])])
    assert rows_in_one_order(long)["s"].tolist() == [0.0, 1.0, 2.0, 3.0, 5.0, 4.0]
    one = long[long["run"] == "C25"]  # one run: as it came
    assert rows_in_one_order(one)["s"].tolist() == [3.0, 4.0, 5.0]


def test_a_note_naming_an_older_code_run_says_so():
    # review 12: Table 23's note "In G3, the eager step taken apart gives ..." (G3 older code)
    assert older_noted("In G3, the step gives 1.3; in C25 1.5 and G3 1.1.", ["C1", "G3"]) == (
        "In G3 (older code), the step gives 1.3; in C25 1.5 and G3 1.1.")
    assert older_noted("Runs C26–C44 agree.", ["C30"]) == "Runs C26–C44 agree. Older code: C30."
    said = "In G3 (older code), it gives 1.3."
    assert older_noted(said, ["G3"]) == said and older_noted("In C25.", ["G3"]) == "In C25."
