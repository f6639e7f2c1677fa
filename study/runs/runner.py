"""Runs an experiment's cases on each device, with progress on stderr, and stores the records."""
import inspect
import os
import sys
import time
import traceback

from study.runs import provenance, results
from study.runs.checkpoint import Checkpoint, chunk_path, code_fingerprint, write_chunk
from study.measure.devices import Device
from study.errors import StudyError, first_error_line
from study.measure.rules import written


class Progress:
    def __init__(self, quiet: bool = False, stream=None):
        self.quiet = quiet
        self.stream = stream or sys.stderr

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(message, file=self.stream, flush=True)


def cases_of(experiment, scope: str, inits: int | None = None, rules=None) -> list[dict]:
    """The experiment's cases: for `rules` where given (an experiment that measures rules
    takes them), else for the registry."""
    options = {"inits": inits} if experiment.counts_inits else {}
    if rules is not None:
        if "rules" not in inspect.signature(experiment.cases).parameters:
            raise TypeError(f"experiment {experiment.name} takes no rules")
        options["rules"] = rules
    return experiment.cases(scope, **options)


# Errors that say the experiment's own code is wrong (a typo, a missing key, a broken
# assumption), never a measured failure of a framework: they stop the run, not become a result.
CODE_ERRORS = (NameError, KeyError, AssertionError, ImportError, SyntaxError)


def run_case(experiment, device: Device, case: dict,
             progress: Progress | None = None) -> list[dict]:
    """One case's rows; a case that raises gives one row of the table failed_cases instead (the
    case, its device, its error), unless the error is one of CODE_ERRORS."""
    try:
        with device.as_default():
            return experiment.run_case(device, **case)
    except CODE_ERRORS:
        raise
    except Exception as exc:  # noqa: BLE001  a failed case is a result, shown in the report
        if progress:
            progress("".join(traceback.format_exception_only(exc)).strip())
        return [{"part": results.FAILED_CASES, "case": written(case), "device": device.name,
                 "error": first_error_line(exc)}]


def case_label(case: dict) -> str:
    """A case in a progress line: rules by their keys, a list of several by its length."""
    return " ".join(f"{k}=<{len(v)}>" if isinstance(v, (list, tuple, dict)) and len(v) > 2
                    else f"{k}={v}" for k, v in written(case).items())


def run_cases(experiment, device: Device, cases: list[dict], progress: Progress,
              checkpoint: Checkpoint | None = None) -> list[dict]:
    """Every case on `device`; a case that raises is recorded, not fatal. With a checkpoint
    (made for these cases), cases it already holds are taken from it and new ones added."""
    done = dict(checkpoint.done) if checkpoint else {}
    tag = f"[{experiment.name} {device.name}]"
    if done:
        progress(f"{tag} resuming: {len(done)} of {len(cases)} cases already done "
                 f"({checkpoint.path})")
    records, ran, start = [], 0, time.perf_counter()
    for i, case in enumerate(cases):
        if i in done:
            records.extend(done[i]["records"])
            continue
        elapsed = time.perf_counter() - start
        left = len(cases) - len(done) - ran
        estimate = f", ~{elapsed / ran * left:.0f}s left" if ran else ""
        label = case_label(case)
        progress(f"{tag} {i + 1}/{len(cases)} {label} ({elapsed:.1f}s{estimate})")
        t0 = time.perf_counter()
        new = run_case(experiment, device, case, progress)
        if checkpoint:
            checkpoint.add(i, new, time.perf_counter() - t0)
        records.extend(new)
        ran += 1
    progress(f"{tag} done in {time.perf_counter() - start:.1f}s")
    return records


def case_slice(text: str) -> tuple[int, int]:
    """`--cases I:J` as (I, J): the cases I to J - 1, in case order."""
    try:
        start, stop = (int(part) for part in text.split(":"))
    except ValueError:
        raise StudyError(f"--cases takes I:J (two case indices), not {text!r}") from None
    if not 0 <= start < stop:
        raise StudyError(f"--cases {text}: needs 0 <= I < J")
    return start, stop


def run_experiment(experiment, devices: list[Device], scope: str, progress: Progress,
                   root: str = results.RESULTS_DIR, inits: int | None = None,
                   rules=None, chunk: tuple[int, int] | None = None) -> list[str]:
    """Run and write one result file per device; with `chunk` (I, J), only cases I to J - 1,
    written as a chunk file (study.runs.checkpoint.write_chunk) for merge_chunks to join."""
    from study.measure.frameworks import use_shared_settings
    # before provenance records the settings, and before any case runs; no compile cache
    # where compile time is measured (a timed experiment's --quick prints none: it reads
    # compiled code back from the user's caches, and starts in seconds)
    use_shared_settings(compile_cache=not experiment.timed or scope == "quick")
    paths = []  # the caller checked that root is writable (study.cli, before any work)
    for device in devices:
        prov = provenance.collect(device, experiment.seed, scope)
        cases = cases_of(experiment, scope, inits, rules)
        total, name = len(cases), experiment.name
        if chunk:
            if chunk[1] > total:
                raise StudyError(f"--cases {chunk[0]}:{chunk[1]}: {name} has {total} cases")
            cases = cases[chunk[0]:chunk[1]]
            out = chunk_path(root, name, results.run_name(prov) + ".json", *chunk)
            partial = os.path.join(root, name, ".partial" + os.path.basename(out) + "l")
        else:
            partial = results.partial_path(root, name, prov)
        checkpoint = Checkpoint(partial, cases, code_fingerprint())
        checkpoint.load()
        if checkpoint.discarded:
            progress(f"[{name} {device.name}] starting afresh: {checkpoint.path} "
                     f"holds cases of other code or another case list")
        earlier = sum(entry["seconds"] for entry in checkpoint.done.values())
        checkpoint.start()
        start = time.perf_counter()
        records = run_cases(experiment, device, cases, progress, checkpoint)
        at_start, prov = prov, provenance.collect(device, experiment.seed, scope)
        prov.update({k: at_start[k] for k in ("git_commit", "git_dirty")})  # the code that ran
        prov["code_fingerprint"] = checkpoint.header["code"]
        prov["wall_s"] = round(time.perf_counter() - start + earlier, 3)
        if checkpoint.done and earlier:
            prov["resumed_after_s"] = round(earlier, 3)
        if inits:
            prov["inits"] = inits
        if chunk:
            write_chunk(out, name, prov, records, (*chunk, total))
            paths.append(out)
        else:
            paths.append(results.write_run(name, prov, records, root))
        checkpoint.remove()
        progress(f"[{name} {device.name}] wrote {paths[-1]}")
        if os.environ.get(provenance.ENGINE_ENV):  # a shard: tell the engine what it wrote
            print(f"{SHARD_OUTPUT_MARKER} {paths[-1]}", flush=True)
    return paths


SHARD_OUTPUT_MARKER = "study-shard-wrote:"  # a stdout line that names a file a shard wrote
