"""What custom rules cost: the timing experiment's cases (their scopes: experiments.timing)
and their records.

The harness checks itself: each compiled case at CHECK_SIZES is also prepared alone in a fresh
process, and blocks of rounds alternate between the run and that process (this VM's speed
drifts by up to 1.8× over seconds); the checks that take a case apart (experiments.timing.checks)
run in several processes one after another (experiments.timing.processes).
"""
import json
import sys

import numpy as np

from experiments.timing.harness import (BLOCKS, BUDGET_S, BYTES_PER_ELEMENT, COMPILED,
                                        FRESH_BLOCKS, HARNESS_LIMIT, MAX_ROUNDS, MIN_ROUNDS,
                                        MODES, NETS,
                                        SCOPE_NETS, SCOPE_WORKLOADS, SIZES, TARGETS,
                                        _dynamo_counts, _prepared, memory_record, net_thunk,
                                        set_equal_threads, timed, timed_rules, twin_pairs)
from experiments.timing.processes import Child, Worker, merge_processes
from study.measure.devices import Device
from study.measure.rule import REFERENCE_RELU
from study.measure.rules import by_key, received, registry_unless, sent, written
from study.workloads.timing import quartiles, timed_rounds


def time_rules(framework: str, mode: str, n: int, device, rules,
               fresh: "FreshProcess | None" = None, processes: int = 1,
               kept_bytes: bool = True) -> dict:
    """{rule key: timing} for the rules (one framework's), interleaved round by round: this
    process's share of the case's rounds where `processes` take them one after another. With
    a fresh process, blocks of rounds alternate between this process and that one, which
    times the same case alone, so that the machine's drift hits both alike. `kept_bytes`:
    also what each rule keeps for backward (the same in every block: the first block's)."""
    thunks, timings, made = _prepared(framework, mode, n, device, rules)
    blocks = FRESH_BLOCKS if fresh else 1
    budget_s = BUDGET_S * len(thunks) / processes
    rounds = -(-MIN_ROUNDS // processes)
    in_run_blocks: dict = {k: [] for k in thunks}
    fresh_blocks: dict = {k: [] for k in thunks}
    if fresh:
        fresh.ready()
    for block in range(blocks):
        before = {k: len(t["times_s"]) for k, t in timings.items()}
        timed_rounds(thunks, timings, MAX_ROUNDS // blocks, budget_s / blocks,
                     max(1, rounds // blocks), collect=block == 0)
        for key, t in timings.items():
            in_run_blocks[key].append(float(np.median(t["times_s"][before[key]:])))
        if fresh:
            for key, times in fresh.time(BUDGET_S * len(thunks) / blocks).items():
                fresh_blocks[key].append(times)
    counts = _dynamo_counts() if mode == "compile" else None
    for key, t in timings.items():
        t.update(stats=quartiles(t["times_s"]), dispatch=quartiles(t["dispatch_s"]),
                 dynamo_counts_of_case=counts)
        if kept_bytes:
            moved = made[key].moved()
            t.update(saved_bytes_per_element=made[key].saved() / n,
                     xla_bytes_per_element=None if moved is None else moved / n)
        if fresh:
            every = [x for block in fresh_blocks[key] for x in block]
            t["block_medians"] = in_run_blocks[key]
            t["fresh"] = {"stats": quartiles(every), "first_call_s": fresh.first_calls[key],
                          "blocks": blocks,
                          "block_medians": [float(np.median(b)) for b in fresh_blocks[key]]}
    return timings


class FreshProcess(Child):
    """A child that prepares the same case and times it on request: blocks of rounds alternate
    with this process's (see time_rules)."""

    def __init__(self, device_name: str, framework: str, mode: str, n: int, rules):
        super().__init__("serve_fresh", device_name, framework, mode, str(n),
                         json.dumps(sent(list(rules))))  # keys, or where each is defined
        self.first_calls: dict = {}

    def ready(self) -> None:
        self.first_calls = self.reply("the fresh process")["first_call_s"]

    def time(self, budget_s: float) -> dict:
        return self.ask({"budget_s": budget_s}, "the fresh process")


def serve_fresh() -> None:
    """The fresh process: prepare the case named on the command line, say so with its first
    calls, then time a block of rounds for each request on stdin until stdin closes."""
    from study.measure.frameworks import use_shared_settings
    use_shared_settings(compile_cache=False)  # its first calls time compilation
    device_name, framework, mode, n, rules = sys.argv[1:6]
    device = Device(device_name)
    set_equal_threads()
    with device.as_default():
        thunks, timings, _ = _prepared(framework, mode, int(n), device,
                                       list(received({"rules": json.loads(rules)})["rules"]))
        print(json.dumps({"first_call_s": {k: t["first_call_s"] for k, t in timings.items()}}),
              flush=True)
        for i, line in enumerate(sys.stdin):
            budget = json.loads(line)["budget_s"]
            block = {k: {"times_s": [], "dispatch_s": []} for k in thunks}
            timed_rounds(thunks, block, MAX_ROUNDS // FRESH_BLOCKS, budget,
                         max(1, MIN_ROUNDS // FRESH_BLOCKS), collect=i == 0)
            print(json.dumps({k: b["times_s"] for k, b in block.items()}), flush=True)


def _rules_records(base: dict, device, framework: str, mode: str, n: int,
                   fresh_check: bool, rules, block: int = 0, blocks: int = 1,
                   worker: int = 0) -> list[dict]:
    fresh = FreshProcess(device.name, framework, mode, n, rules) if fresh_check else None
    try:
        timings = time_rules(framework, mode, n, device, rules, fresh, blocks, block == 0)
    finally:
        if fresh:
            fresh.close()
    names = {r.key: r.name for r in rules}
    return [{**base, "part": "rule", "rule": key, "name": names[key],
             "bytes_per_element": BYTES_PER_ELEMENT, "budget_s": BUDGET_S,
             "interleaved_with": list(timings), **t} for key, t in timings.items()]


# The fresh-process check and the eager cost taken apart at 10^6 (at 10^7 too with --full:
# there one torch.compile case takes over a minute on this CPU, doubled by the fresh check)
CHECK_SIZES = {"quick": (), "standard": (10 ** 6,), "full": (10 ** 6, 10 ** 7)}


# --quick is a fast look at the rules and the seed net within 45 s: it compiles at its largest
# size only, into the user's inductor folder (its first calls may be read backs, never compile
# times), in one block, and leaves out the harness's checks
QUICK_SKIPS = ("compiled rules below 10^6 elements", "the torch.compile seed net",
               "the fresh-process check", "the Timer cross-check", "the probes",
               "the shared dynamic wrapper", "the eager cost taken apart", "the page-fault check",
               "blocks in several processes", "compiling from an empty inductor folder")


def compiled_sizes(scope: str, sizes: tuple) -> tuple:
    """The sizes a compiled mode times a rule at: every size with --full; at 10^6 and more in
    the standard scope (below, a compiled step costs its call's overhead, which the eager
    modes show, while the first compile there is a sixth of the scope's wall); --quick, its
    largest only."""
    if scope == "full":
        return sizes
    return tuple(n for n in sizes if n >= 10 ** 6) if scope != "quick" else sizes[-1:]


def _skipped(scope: str | None) -> list[str]:
    if scope != "quick":
        return []
    print(f"[timing] --quick leaves out {', '.join(QUICK_SKIPS)} and the matmul rate",
          file=sys.stderr, flush=True)
    return list(QUICK_SKIPS) + ["the matmul rate"]


def cases(scope: str, rules=None) -> list[dict]:
    """The cases of a scope for the rules that `rules` (the registry unless given) mark timed,
    alone and in nets, with the pairs compared across frameworks."""
    rules = registry_unless(rules)
    sizes = SIZES[scope]
    checks = scope != "quick"
    timed_alone = {fw: timed_rules(rules, fw) for fw in MODES}
    timed_alone = {fw: chosen for fw, chosen in timed_alone.items() if chosen}
    if checks:  # fresh processes load each rule from where it is defined: fail before timing
        sent([r for chosen in timed_alone.values() for r in chosen])
    out = [{"part": "plan", "scope": scope,
            "rules": tuple(r for chosen in timed_alone.values() for r in chosen)}] + [
        {"part": "machine", "n": n, "matmul": checks and n == sizes[-1]}
        for n in sorted({min(10 ** 6, sizes[-1]), sizes[-1]})]
    timed = [{"part": "rules", "framework": fw, "mode": m, "n": n,
              "fresh_check": checks and m in COMPILED and n in CHECK_SIZES[scope],
              "rules": chosen}
             for fw, chosen in timed_alone.items() for m in MODES[fw] for n in sizes
             if m not in COMPILED or n in compiled_sizes(scope, sizes)]
    for net in SCOPE_NETS[scope]:
        for workload in SCOPE_WORKLOADS[scope] if net != "large" else ("fwd_bwd",):
            for fw in MODES:
                for m in MODES[fw]:
                    for r in timed_rules(rules, fw, net):
                        if net == "large" and m not in ("eager", "jit"):
                            continue  # ~200 GFLOP a step: no compiled mode of torch
                        if m == "compile" and (net != "seed" or not checks) and scope != "full":
                            continue  # a torch.compile a rule and net: the seed net only
                        timed.append({"part": "net", "framework": fw, "mode": m, "rule": r,
                                      "net": net, "workload": workload})
    if checks:  # the cases taken apart, each piece ÷ the built-in's (its budget in blocks)
        timed += [{"part": "eager_parts", "framework": fw, "n": n,
                   "processes": BLOCKS[scope], "rules": chosen}
                  for fw, chosen in timed_alone.items() for n in CHECK_SIZES[scope]]
        timed.append({"part": "probes", "n": 10 ** 6, "processes": BLOCKS[scope]})
    # each case in BLOCKS blocks, block by block across the run: a case's blocks are a quarter
    # of the run apart (the machine's drift between them counts) and each in its own process
    # (block b in worker b; 0: this one); the fresh-process check with the first block
    out += [{**case, "block": b, "blocks": BLOCKS[scope], "worker": b,
             **({"fresh_check": case["fresh_check"] and b == 0} if "fresh_check" in case else {})}
            for b in range(BLOCKS[scope]) for case in timed]
    out += [{"part": "memory", "framework": fw, "rule": r}
            for fw, chosen in timed_alone.items() for r in chosen]
    if not checks:
        return out
    out += [{"part": "page_faults", "n": n} for n in (10 ** 6, sizes[-1])]
    out.append({"part": "cross_check", "n": 10 ** 6})
    out.append({"part": "shared_dynamic", "rule": by_key(REFERENCE_RELU["torch"].key),
                "n": 10 ** 6})
    return out


def _plan_records(base: dict, device, scope: str, rules=None) -> list[dict]:
    """What the report reads as this run's design, never from today's code: the built-in
    each framework's rules are measured against, the pairs, the targets and the limits, and
    whether torch compiled into an empty inductor folder (study.measure.frameworks)."""
    from study.measure.frameworks import torch_compile_cache
    rules = registry_unless(rules)
    frameworks = dict.fromkeys(r.framework for r in rules if r.timed)
    return [{**base, "targets": targets_for(scope), "torch_compile_cache": torch_compile_cache(),
             "reference_rules": {fw: REFERENCE_RELU[fw].key for fw in frameworks},
             "torch_jax_pairs": twin_pairs(rules), "harness_limit": HARNESS_LIMIT,
             "min_rounds": MIN_ROUNDS, "blocks": BLOCKS[scope], "budget_s": BUDGET_S,
             "skipped": _skipped(scope)}]


def targets_for(scope: str) -> list[dict]:
    """TARGETS with each threshold that depends on the scope as this scope's."""
    return [{**t, "threshold": t["threshold"][scope] if isinstance(t["threshold"], dict)
             else t["threshold"]} for t in TARGETS]


def _memory_records(base: dict, device, framework: str, rule) -> list[dict]:
    return [{**base, "name": rule.name, **memory_record(framework, rule.fn, device)}]


def part_functions() -> dict:
    """{part: records(base, device, **the case's other fields)}."""
    from experiments.timing import checks  # torch and JAX
    return {"plan": _plan_records, "rules": _rules_records, "net": net_records,
            "memory": _memory_records, "machine": checks.machine_limits,
            "eager_parts": checks.eager_parts_records, "page_faults": checks.page_fault_records,
            "cross_check": checks.cross_check,
            "probes": checks.probe_records, "shared_dynamic": checks.shared_dynamic_records}


def run_case(device, part: str, **case) -> list[dict]:
    """The records of one case: its part's function, called with the case's fields (in
    fresh processes where the case names how many)."""
    if part not in part_functions():
        raise ValueError(f"unknown timing part {part!r}")
    if "worker" in case:  # a block of a case, timed in its own process
        if not case["worker"]:
            return _part_records(device, part, case)
        worker = Worker.started(device.name, case["worker"])[case["worker"] - 1]
        return worker.records(part, sent(case))
    if case.get("processes", 1) > 1:
        shares = [_part_records(device, part, case)]
        workers = Worker.started(device.name, case["processes"] - 1)
        theirs = {**case, "fresh_check": False} if "fresh_check" in case else case  # once
        return merge_processes(shares + [w.records(part, sent(theirs)) for w in workers])
    return _part_records(device, part, case)


def _part_records(device, part: str, case: dict) -> list[dict]:
    """The part's records; each starts with the case's fields, rules as their keys, but for
    the list of rules a case times, which its records name one by one."""
    base = {"part": part, "device": device.name, "threads": set_equal_threads(),
            **{k: v for k, v in written(case).items() if k != "rules"}}
    return part_functions()[part](base, device, **case)


def net_records(base: dict, device, framework: str, mode: str, rule, net: str,
                workload: str, block: int = 0, blocks: int = 1, worker: int = 0) -> list[dict]:
    shape = NETS[net]
    thunk, sync = net_thunk(framework, mode, rule, shape, workload, device)
    b, i, h, o = shape
    flops = 3 * 2 * b * (i * h + h * o)  # forward matmuls, twice that for backward
    return [{**base, "name": rule.name, "shape": list(shape), "flops": flops,
             **timed(thunk, sync, repeats=20, warmup=0 if net == "large" else 2,
                     processes=blocks)}]


def serve_parts() -> None:
    """A worker (experiments.timing.processes.Worker): for each request on stdin, a part's
    records on this device as one JSON line."""
    from study.measure.frameworks import use_shared_settings
    use_shared_settings(compile_cache=False)  # its first calls time compilation
    device = Device(sys.argv[1])
    with device.as_default():
        for line in sys.stdin:
            request = json.loads(line)
            print(json.dumps(_part_records(device, request["part"], received(request["case"]))),
                  flush=True)
