import io
from types import SimpleNamespace

from study.devices import Device
from study.runner import Progress, run_cases


def test_a_failing_case_is_recorded_with_its_error_and_the_run_goes_on():
    def run_case(device, k):
        if k == 1:
            raise ValueError("planted failure\nsecond line")
        return [{"k": k, "device": device.name}]

    experiment = SimpleNamespace(NAME="fake", cases=lambda scope: [{"k": 0}, {"k": 1}, {"k": 2}],
                                 run_case=run_case)
    stream = io.StringIO()
    records = run_cases(experiment, Device("cpu"), "standard", Progress(stream=stream))
    assert records == [{"k": 0, "device": "cpu"},
                       {"k": 1, "device": "cpu", "case_error": "ValueError: planted failure"},
                       {"k": 2, "device": "cpu"}]
    log = stream.getvalue()
    assert "[fake cpu] 3/3 k=2" in log and " of ~" in log  # progress with an estimate
    quiet = io.StringIO()
    run_cases(experiment, Device("cpu"), "standard", Progress(quiet=True, stream=quiet))
    assert quiet.getvalue() == ""


def test_a_failed_case_shows_in_the_report_table():
    import experiments.two_layer as two_layer
    from study.results import Run
    prov = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j"}
    failed = {"dataset": "seed", "rule": "torch_relu", "device": "cpu",
              "case_error": "RuntimeError: planted"}
    table = next(t for t in two_layer.tables([Run("two_layer", prov, [failed], "x.json")])
                 if t.id == "gradients")
    assert any("failed: RuntimeError: planted" in str(cell) for row in table.rows for cell in row)
