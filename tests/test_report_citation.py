"""What a citation copies names its code and is no older than its data: REPORT.md states the
commit and date of the code that rendered it, and CITATION.cff's release is dated no earlier
than the newest committed result, with the package's version."""
import datetime
import os
import re
import tomllib

from study.runs.provenance import REPO_ROOT, code_commit
from study.report.document import render


def citation() -> dict[str, str]:
    with open(os.path.join(REPO_ROOT, "CITATION.cff"), encoding="utf-8") as f:
        return dict(re.findall(r"^(version|date-released): *\"?([^\"\n]+)\"?$", f.read(), re.M))


def newest_result_day(runs) -> datetime.date:
    return max(datetime.datetime.fromisoformat(r.provenance["utc"]) for r in runs).date()


def release_is_current(cited: dict[str, str], runs, version: str) -> bool:
    released = datetime.date.fromisoformat(cited["date-released"])
    return cited["version"] == version and released >= newest_result_day(runs)


def test_citation_cff_is_no_older_than_the_newest_committed_result(committed_runs):
    results, reference = committed_runs
    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert release_is_current(citation(), results + reference, version), (
        citation(), newest_result_day(results + reference), version)


def test_a_release_dated_before_its_results_or_under_another_version_is_caught(committed_runs):
    # CITATION.cff once said 0.2.0 of 2026-11-23, a day before the results it cites
    results, _ = committed_runs
    day = newest_result_day(results)
    before = (day - datetime.timedelta(days=1)).isoformat()
    assert not release_is_current({"version": "1", "date-released": before}, results, "1")
    assert not release_is_current({"version": "1", "date-released": day.isoformat()}, results, "2")
    assert release_is_current({"version": "1", "date-released": day.isoformat()}, results, "1")


def test_the_report_states_the_commit_and_date_of_the_code_that_rendered_it(committed):
    code = code_commit()
    assert code, "the tests run in a git checkout"
    head = " ".join(committed["REPORT.md"].split("## Answers", 1)[0].split())  # the glossary's
    assert f"the code of commit `{code['commit'][:7]}` ({code['date'][:10]}) rendered" in head
    assert "and measured nothing" in head  # each run names the commit that measured it
    bare = render([], [], [], figures=False, code=None)["REPORT.md"]
    assert "outside a git checkout" in " ".join(bare.split())  # never a commit it cannot name
