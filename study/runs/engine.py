"""Shards on Ray: each (environment, experiment, chunk of cases) runs as one `study run` in its
own interpreter, inside a Ray task; a failed shard is retried once, then recorded, and a rerun
resumes from the shards that finished.

    from study.runs.engine import Shard, run_shards
    outcomes = run_shards([Shard(NAME, python=".history/torch-2.15.0/bin/python"),
                           Shard(OTHER, cases=(0, 4)), Shard(OTHER, cases=(4, 8))])

Without `address` (and with Ray not yet started in this process) a local cluster starts on this
machine, bound to 127.0.0.1, without a dashboard, and stops at the end. With `address`, the
shards go to that cluster; every node needs this repository at the same path and the shards'
interpreters. The shard's `study run` names the engine and the node in its provenance
(study.runs.provenance.ENGINE_ENV, NODE_ENV). Chunks of one run write chunk files that are merged
into its result file once all of them are in (study.runs.checkpoint.merge_chunks). Which shards
finished is kept in `<results dir>/.engine-shards.json`, for this code
(study.runs.checkpoint.code_fingerprint):
a rerun skips them while the files they wrote exist; `fresh=True` measures every shard again.
"""
import json
import logging
import os
import sys
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from study.runs import results
from study.runs.atomic import write_text_atomically
from study.runs.checkpoint import code_fingerprint, merge_chunks, result_name_of_chunk
from study.errors import StudyError, first_error_line
from study.runs.provenance import ENGINE_ENV, NODE_ENV, REPO_ROOT
from study.runs.runner import SHARD_OUTPUT_MARKER, Progress

LEDGER = ".engine-shards.json"
RETRIES = 1  # a failed shard runs at most twice
CANCEL_WAIT_S = 30  # how long an interrupted run waits for its cancelled shards to stop


@dataclass(frozen=True)
class Shard:
    """One `<python> -m study run EXPERIMENT` (of cases I:J where `cases` is (I, J))."""
    experiment: str
    python: str = sys.executable  # the environment: a release's own venv measures
    scope: str = "standard"  # quick, standard or full
    device: str = "all"
    results_dir: str = results.RESULTS_DIR
    cases: tuple[int, int] | None = None
    env: dict = field(default_factory=dict)  # extra environment variables for the process
    inits: int | None = None

    def argv(self) -> list[str]:
        scope = {"quick": ["--quick"], "full": ["--full"], "standard": []}[self.scope]
        return ([self.python, "-m", "study", "run", self.experiment, "--device", self.device,
                 "--results-dir", os.path.abspath(self.results_dir), "--quiet", *scope]
                + (["--inits", str(self.inits)] if self.inits is not None else [])
                + (["--cases", f"{self.cases[0]}:{self.cases[1]}"] if self.cases else []))

    def key(self) -> str:
        return json.dumps({**asdict(self), "results_dir": None}, sort_keys=True)

    @property
    def label(self) -> str:
        chunk = f" cases {self.cases[0]}:{self.cases[1]}" if self.cases else ""
        return f"{self.experiment}{chunk} ({self.python})"


@dataclass
class ShardOutcome:
    shard: Shard
    status: str  # "done", "skipped" (finished by an earlier run) or "failed"
    paths: list[str] = field(default_factory=list)  # result (or chunk) files it wrote
    error: str | None = None  # a failed shard's error, its first line
    node: str | None = None
    seconds: float | None = None  # wall time of the last try, in the Ray task


class ShardsFailed(StudyError):
    """Some shards failed twice; the others' files are complete."""

    exit_code = 1


def engine_name() -> str:
    import ray
    return f"ray {ray.__version__}"


def _run_shard_process(argv: list[str], env: dict, restore: dict, cwd: str) -> dict:
    """The Ray task: the shard's `study run` as a subprocess; raises if it exits non-zero.
    `restore`: variables that Ray sets for its workers, as the caller had them (None: unset).
    Sent to the workers by value, as they may import another checkout's `study`."""
    import os
    import signal
    import socket
    import subprocess
    import threading
    import time

    import ray
    if threading.current_thread() is threading.main_thread():
        # ray.cancel interrupts a task as SIGINT does, and a worker that inherited SIGINT
        # ignored (a shell script's background job starts its processes so) never sees it
        signal.signal(signal.SIGINT, signal.default_int_handler)
    node = (f"{socket.gethostname()} ({ray.util.get_node_ip_address()}, "
            f"ray node {ray.get_runtime_context().get_node_id()[:8]})")
    start = time.perf_counter()
    child_env = {k: v for k, v in os.environ.items() if restore.get(k, "") is not None}
    child_env.update({k: v for k, v in restore.items() if v is not None})
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**child_env, **env, NODE_ENV: node})
    try:
        while True:  # short waits, so that ray.cancel's KeyboardInterrupt lands between them
            try:
                stdout, stderr = proc.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                continue
    except BaseException:
        proc.kill()  # a cancelled shard leaves no process behind
        raise
    if proc.returncode != 0:
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        said = next((ln for ln in reversed(lines) if ln.startswith("error:")),
                    lines[-1] if lines else "")
        raise RuntimeError(f"exit status {proc.returncode}" + (f": {said}" if said else ""))
    return {"node": node, "seconds": time.perf_counter() - start,
            "paths": [ln.split(" ", 1)[1] for ln in stdout.splitlines()
                      if ln.startswith(SHARD_OUTPUT_MARKER)]}


class Ledger:
    """The shards of one results folder that finished, and the files each wrote, for one code."""

    def __init__(self, results_dir: str, code: str):
        self.path = os.path.join(results_dir, LEDGER)
        self.code = code
        self.finished: dict[str, list[str]] = {}
        try:
            with open(self.path, encoding="utf-8") as f:
                saved = json.load(f)
        except (OSError, ValueError):  # none yet, or unreadable: every shard runs
            return
        if isinstance(saved, dict) and saved.get("code") == code:
            self.finished = saved.get("shards", {})

    def paths(self, shard: Shard) -> list[str] | None:
        paths = self.finished.get(shard.key())
        return paths if paths and all(os.path.exists(p) for p in paths) else None

    def record(self, shard: Shard, paths: list[str]) -> None:
        self.finished[shard.key()] = paths
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        write_text_atomically(self.path, json.dumps({"code": self.code, "shards": self.finished},
                                                    indent=1, sort_keys=True) + "\n")


def start_local_cluster(num_cpus: int | None = None) -> None:
    """A Ray cluster on this machine that listens on 127.0.0.1 only, with no dashboard."""
    # Ray reads this switch for a cluster of one machine: the node's address then stays
    # 127.0.0.1 instead of the machine's, and every server binds to the node's address.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray
    from ray._private import ray_constants
    ray_constants.ENABLE_RAY_CLUSTER = False  # in case ray was imported before the switch
    with warnings.catch_warnings():  # JAX warns of any fork; Ray's is a fork and exec
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        ray.init(num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
                 log_to_driver=False, logging_level=logging.WARNING, configure_logging=True)


def run_shards(shards: list[Shard], address: str | None = None,
               progress: Progress | None = None, fresh: bool = False,
               num_cpus: int | None = None) -> list[ShardOutcome]:
    """Run every shard on Ray, one outcome per shard in the order given. Shards finished by an
    earlier call (same code, files still there) are skipped unless `fresh`. A shard whose
    process fails is retried once, then its outcome is "failed" with the error; the others go
    on. Chunks of one run are merged into its result file once all of them are done.

    >>> outcomes = run_shards([Shard(NAME, device="cpu")])
    >>> [o.status for o in outcomes]
    ['done']
    """
    progress = progress or Progress()
    code = code_fingerprint()
    ledgers = {d: Ledger(d, code) for d in {os.path.abspath(s.results_dir) for s in shards}}
    ledger_of = {id(s): ledgers[os.path.abspath(s.results_dir)] for s in shards}
    outcomes: list[ShardOutcome | None] = [None] * len(shards)
    for i, shard in enumerate(shards):
        paths = None if fresh else ledger_of[id(shard)].paths(shard)
        if paths:
            outcomes[i] = ShardOutcome(shard, "skipped", paths)
    todo = [i for i, o in enumerate(outcomes) if o is None]
    progress(f"[engine] {len(shards)} shards: {len(shards) - len(todo)} finished before, "
             f"{len(todo)} to run")
    if todo:
        _dispatch(shards, todo, outcomes, ledger_of, address, progress, num_cpus)
    _merge_chunks(outcomes, ledger_of, progress)
    return outcomes


def _dispatch(shards, todo, outcomes, ledger_of, address, progress, num_cpus) -> None:
    import ray
    from ray import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # see _run_shard_process
    started = not ray.is_initialized()
    if started and address:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    elif started:
        start_local_cluster(num_cpus)
    task = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=True)(_run_shard_process)
    slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
    engine = {ENGINE_ENV: engine_name()}
    waiting, running, took = list(todo), {}, []
    try:
        while waiting or running:
            while waiting and len(running) < slots:  # so that "running" is what runs
                i = waiting.pop(0)
                shard = shards[i]
                gpus = 1 if shard.device == "cuda" else 0
                if gpus > ray.cluster_resources().get("GPU", 0):  # Ray would wait for ever
                    outcomes[i] = ShardOutcome(shard, "failed", error="no GPU in the cluster")
                    progress(f"[engine] {shard.label} failed: no GPU in the cluster")
                    continue
                ref = task.options(num_gpus=gpus).remote(
                    shard.argv(), {**shard.env, **engine}, _ray_overrides(gpus), REPO_ROOT)
                running[ref] = i
            if not running:
                continue
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                i = running.pop(ref)
                outcomes[i] = _outcome(shards[i], ref)
                if outcomes[i].status == "done":
                    took.append(outcomes[i].seconds)
                    ledger_of[id(shards[i])].record(shards[i], outcomes[i].paths)
                progress(_progress_line(outcomes, outcomes[i], len(running), len(waiting),
                                        took, slots))
    except BaseException:  # interrupted: stop the shards in flight (each kills its process)
        for ref in running:
            ray.cancel(ref)
        # before the cluster goes: a worker stopped first would leave its shard's process
        if running:
            ray.wait(list(running), num_returns=len(running), timeout=CANCEL_WAIT_S)
        raise
    finally:
        if started:
            ray.shutdown()


# Ray caps a task's threads (OMP_NUM_THREADS=1) and hides GPUs from a task that asks for
# none: a shard runs as the plain `study run` would, with this process's values of them,
# except the GPUs that Ray assigns to a shard on cuda.
RAY_SET_VARIABLES = ("OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES")


def _ray_overrides(gpus: int) -> dict:
    return {k: os.environ.get(k) for k in RAY_SET_VARIABLES
            if not (gpus and k == "CUDA_VISIBLE_DEVICES")}


def _outcome(shard: Shard, ref) -> ShardOutcome:
    import ray
    try:
        value = ray.get(ref)
    except ray.exceptions.RayError as e:  # the task failed on each try, or its worker died
        cause = getattr(e, "cause", None)
        return ShardOutcome(shard, "failed", error=first_error_line(cause or e))
    return ShardOutcome(shard, "done", value["paths"], node=value["node"],
                        seconds=value["seconds"])


def _progress_line(outcomes, latest: ShardOutcome, running: int, waiting: int, took: list,
                   slots: int) -> str:
    done = sum(o is not None for o in outcomes)
    failed = sum(o is not None and o.status == "failed" for o in outcomes)
    estimate = (f", ~{sum(took) / len(took) * (running + waiting) / slots:.0f}s left"
                if took else "")
    what = (f"failed: {latest.error}" if latest.status == "failed"
            else f"done in {latest.seconds:.1f}s on {latest.node}")
    return (f"[engine] {done} done ({failed} failed), {running} running, {waiting} left"
            f"{estimate}; {latest.shard.label} {what}")


def _merge_chunks(outcomes, ledger_of, progress) -> None:
    """Write the result file of each run whose chunks are all in, and point the ledger there."""
    groups = defaultdict(list)  # (folder, result file name) -> [(outcome, chunk path)]
    for outcome in outcomes:
        if outcome.shard.cases and outcome.status != "failed":
            for path in outcome.paths:
                if os.path.basename(path).startswith(".chunk-"):
                    groups[os.path.dirname(path), result_name_of_chunk(path)].append(
                        (outcome, path))
    for (folder, name), members in sorted(groups.items()):
        written = merge_chunks([path for _, path in members])
        if written is None:
            progress(f"[engine] {os.path.join(folder, name)}: chunks missing; a rerun adds them")
            continue
        for outcome, path in members:
            outcome.paths = [written if p == path else p for p in outcome.paths]
            ledger_of[id(outcome.shard)].record(outcome.shard, outcome.paths)
        progress(f"[engine] merged {len(members)} chunks into {written}")


def chunks_of(count: int, parts: int) -> list[tuple[int, int]]:
    """`count` cases in at most `parts` contiguous chunks, as even as can be, in case order."""
    parts = max(1, min(parts, count))
    bounds = [round(count * k / parts) for k in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def failed(outcomes: list[ShardOutcome]) -> list[ShardOutcome]:
    return [o for o in outcomes if o.status == "failed"]
