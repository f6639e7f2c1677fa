"""The instrument's commands, `study check` and `study conformance`: each imports only the
framework it judges, never the experiments."""
import json
import os
import sys

from study.errors import StudyError, first_error_line
from study.runs import atomic


def cmd_check(args) -> None:
    """Exit 0 clean, 1 a finding says a result is silently wrong, 2 usage (via StudyError),
    3 the check itself failed."""
    from study import check as checking
    from study.check import _known
    rule, target = checking.load_target(args.target)
    twin, twin_target = checking.load_target(args.twin) if args.twin else (None, None)
    known = args.known
    if args.update_known and known is None and os.path.exists(args.update_known):
        known = _known.load_known(args.update_known, need_reason=False)  # reasons kept
    options = dict(framework=args.framework, args=checking.parse_args(args.args),
                   kinks=_floats(args.kinks), quick=args.quick, device=args.device,
                   fail_on=checking.parse_fail_on(args.fail_on), name=target,
                   twin_name=twin_target, known=known, source=target, twin_source=twin_target)
    try:
        result = checking.check(rule, twin, **options)
    except StudyError:
        raise
    except Exception as exc:  # noqa: BLE001  a bug of the check, not of the rule
        print(f"internal error of study check: {first_error_line(exc)}", file=sys.stderr)
        raise SystemExit(3) from exc
    unusable = [f for f in result.findings if f.severity == "usage"]
    if unusable:
        raise checking.UsageError(f"{target} is not elementwise ({unusable[0].detail}); "
                                  "every measurement here assumes an elementwise rule")
    if args.update_known:
        _update_known(result, args.update_known)
    if args.json:
        text = json.dumps(result.to_json(), indent=1) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            _write_json(args.json, text)
    if args.json != "-":
        sys.stdout.write(result.to_markdown())
    raise SystemExit(result.exit_code)


def cmd_conformance(args) -> None:
    """Exit 0: every built-in judged follows PyTorch's documented rule, or breaks it as the
    known list says; 1: a break the known list does not name, or a kink that could not be
    measured; 2: usage (via StudyError)."""
    from study import conformance
    known = conformance.load_known(args.known) if args.known else None
    outcomes = [conformance.judge_installed(fw, args.ops, known)
                for fw in conformance.chosen_frameworks(args.framework, args.ops)]
    code = max(o.exit_code for o in outcomes)
    if args.json:
        text = json.dumps({"schema_version": conformance.SCHEMA_VERSION, "exit_code": code,
                           "frameworks": [o.to_json() for o in outcomes]}, indent=1) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            _write_json(args.json, text)
    if args.json != "-":
        sys.stdout.write("\n".join(o.to_markdown() for o in outcomes))
    raise SystemExit(code)


def _update_known(result, path: str) -> None:
    """Write the known file (the entries still matched, one per new failing finding), then
    judge the run by it; say on stderr what changed."""
    from study.check import _known
    data = result.updated_known()
    _write_json(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    before = len(result.known_entries)
    result.apply_known(_known.parse_known(data, path, need_reason=False), path)
    new = sum(1 for e in data["known"] if not e["reason"])
    print(f"wrote {path}: {len(data['known']) - new} kept, {new} new (give each a reason: "
          f"--known refuses an empty one), {before - len(data['known']) + new} no longer "
          "found, removed", file=sys.stderr)


def _floats(text: str | None) -> tuple:
    try:
        return tuple(float(v) for v in (text or "").split(",") if v.strip())
    except ValueError:
        raise StudyError(f"--kinks {text!r} is not a comma-separated list of numbers") from None


def _write_json(path: str, text: str) -> None:
    try:
        atomic.write_text_atomically(path, text)
    except OSError as e:
        raise StudyError(f"cannot write {path}: {e.strerror or e}") from None
