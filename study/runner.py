"""Runs an experiment's cases on each device, with progress on stderr, and stores the records."""
import inspect
import sys
import time
import traceback

from study import provenance, results
from study.devices import Device
from study.errors import first_error_line


class Progress:
    def __init__(self, quiet: bool = False, stream=None):
        self.quiet = quiet
        self.stream = stream or sys.stderr

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(message, file=self.stream, flush=True)


def scopes(experiment) -> tuple[str, ...]:
    """The scopes an experiment offers: every one has quick and standard; some add full."""
    return getattr(experiment, "SCOPES", ("quick", "standard"))


def takes_inits(experiment) -> bool:
    return "inits" in inspect.signature(experiment.cases).parameters


def run_case(experiment, device: Device, case: dict, progress: Progress | None = None) -> list[dict]:
    """One case's records; a case that raises gives one record with its error instead."""
    try:
        with device.as_default():
            return experiment.run_case(device, **case)
    except Exception as exc:  # noqa: BLE001  a failed case is a result, shown in the report
        if progress:
            progress("".join(traceback.format_exception_only(exc)).strip())
        return [{**case, "device": device.name, "case_error": first_error_line(exc)}]


def run_cases(experiment, device: Device, scope: str, progress: Progress,
              inits: int | None = None) -> list[dict]:
    """Every case of `experiment` on `device`; a case that raises is recorded, not fatal."""
    cases = experiment.cases(scope, inits=inits) if inits else experiment.cases(scope)
    records = []
    start = time.perf_counter()
    for i, case in enumerate(cases, 1):
        elapsed = time.perf_counter() - start
        estimate = f" of ~{elapsed / (i - 1) * len(cases):.0f}s" if i > 1 else ""
        label = " ".join(f"{k}={v}" for k, v in case.items())
        progress(f"[{experiment.NAME} {device.name}] {i}/{len(cases)} {label} "
                 f"({elapsed:.1f}s{estimate})")
        records.extend(run_case(experiment, device, case, progress))
    progress(f"[{experiment.NAME} {device.name}] done in {time.perf_counter() - start:.1f}s")
    return records


def run_experiment(experiment, devices: list[Device], scope: str, progress: Progress,
                   root: str = results.RESULTS_DIR, inits: int | None = None) -> list[str]:
    results.ensure_writable(f"{root}/{experiment.NAME}")
    paths = []
    for device in devices:
        start = time.perf_counter()
        records = run_cases(experiment, device, scope, progress, inits)
        wall = time.perf_counter() - start
        prov = provenance.collect(device, getattr(experiment, "SEED", None), scope)
        prov["wall_s"] = round(wall, 3)
        if inits:
            prov["inits"] = inits
        paths.append(results.write_run(experiment.NAME, prov, records, root))
        progress(f"[{experiment.NAME} {device.name}] wrote {paths[-1]}")
    return paths
