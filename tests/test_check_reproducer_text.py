"""The reproducers' text, pinned: what study check writes for each kind, in both frameworks,
byte for byte as tests/reproducers/ holds it (written before the code moved into the Jinja2
templates beside study/check/_reproducer_code.py). Rewrite a file there only where a change to
a reproducer is meant."""
import os

import pytest

from study.check._findings import Finding, Where
from study.check._reproducer import Source, reproducer
from study.workloads.transformations import COLUMNS

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reproducers")
CONVENTIONS = dict(dtype="float32", execution="compiled", input="0", bits="0x00000000")
FINDINGS = {
    "vjp_not_linear": Where("vjp", "float32", "eager", "packed", "-0.0", "0x80000000",
                            cotangent="2, -1 (mixed)"),
    "not_deterministic": Where("determinism", "float16", "eager", "packed", None, "0x3c00"),
    "gradcheck_fails": Where("gradcheck", "float64", "eager", input="0.35",
                             bits="0x3fd6666666666666"),
    "forward_not_finite": Where("conventions", placement="fill, 0-d", **CONVENTIONS),
    "reverse_not_finite": Where("conventions", "bfloat16", "eager", None, "1", "0x3f80"),
    "compiled_differs": Where("conventions", placement="2-D rows", transformation="reverse",
                              **CONVENTIONS),
    "convention_differs_from_twin": Where("conventions", "float32", "eager", None, "0",
                                          "0x00000000", transformation="value"),
    "writes_grad_output": Where("clone_hazard", transformation="a skip connection"),
}
FROM_FILE = Source("/abs/path/rules.py:fn", "", (0.1, 2))
FROM_MODULE = Source("tests.rules_with_findings:AlphaAtZero", ".apply")
TWINS = {"torch": (Source("pkg.jaxmod:relu"), "jax"), "jax": (Source("/x/y.py:R", ".apply"),
                                                              "torch")}


def rendered() -> dict[str, str]:
    """{file name: reproducer}: each kind from a module on the CPU and from a file (with
    arguments after x, and a twin) on CUDA, and transform_wrong with every column."""
    out = {}
    for framework in ("torch", "jax"):
        for kind, where in FINDINGS.items():
            findings = [Finding(kind, where, "")]
            out[f"{framework}-{kind}-module.py"] = reproducer(findings, FROM_MODULE, framework)
            out[f"{framework}-{kind}-file.py"] = reproducer(
                findings, FROM_FILE, framework, TWINS[framework], (0.0, 6.0), "cuda")
        columns = [c for c in COLUMNS if framework == "torch" or c != "forward_ad"]
        findings = [Finding("transform_wrong", Where("transforms", transformation=c), "")
                    for c in columns]
        out[f"{framework}-transform_wrong.py"] = reproducer(findings, FROM_MODULE, framework,
                                                            kinks=(0.0,))
    return out


@pytest.mark.parametrize("name, text", sorted(rendered().items()))
def test_a_reproducer_reads_as_pinned(name, text):
    with open(os.path.join(FOLDER, name + ".txt"), encoding="utf-8") as f:
        assert text == f.read(), name
