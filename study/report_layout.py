"""The report's layout: where each table is numbered and anchored, the prose width, the
file names and the question texts, shared by study.report and its sections.
"""
import textwrap
from dataclasses import dataclass, field

from study.results import Run
from study.tables import Table

MAX_DIFFERENCES_SHOWN = 3


WIDTH = 100  # prose is wrapped to this width; table rows are kept short by their compact forms


GENERATED_FOLDERS = ("tables", "figures")  # everything in them is rewritten by each render


APPENDIX = "APPENDIX.md"


DEVICES = "cpu_vs_gpu"  # the CPU-against-GPU tables, numbered after every experiment's


DEVICE_TABLES = ("devices", "differences")


QUESTION_TEXT = {
    "twins": "Does a ReLU rule written as torch.autograd.Function give exactly the same "
             "gradients as the same rule written as jax.custom_vjp, and as each framework's "
             "built-ins?",
    "zero_point": "What does each built-in return at exactly x = 0 and at its other kinks, in "
                  "each framework, dtype, device and release?",
    "clone": "Why does the textbook MyReLU clone grad_output, and what breaks without the clone?",
    "net": "How do these choices change a real two-layer net's gradients and its training, and "
           "at which precisions?",
    "cost": "What does a custom rule cost in time and memory, eager and compiled, on CPU and GPU?",
    "transforms": "Which transformations does each custom rule survive: jit/compile, vmap, "
                  "higher order, forward mode, export?",
}


def anchor(experiment: str, table_id: str) -> str:
    return f"{experiment}-{table_id}".replace("_", "-")


def number_tables(experiments) -> dict[tuple[str, str], int]:
    """Table numbers from the declared order, the CPU-against-GPU tables last: a table missing
    its data keeps its number."""
    order = [(e.name, tid) for e in experiments for tid in e.tables]
    order += [(DEVICES, tid) for tid in DEVICE_TABLES]
    return {key: i for i, key in enumerate(order, 1)}


def wrap(text: str, indent: str = "") -> str:
    """A paragraph or list item wrapped for reading in a terminal (markdown joins the lines)."""
    return textwrap.fill(text, WIDTH, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


@dataclass
class Layout:
    """Where each table goes and how it is linked; the files written so far."""
    numbers: dict[tuple[str, str], int]
    in_appendix: set[tuple[str, str]]
    runs: list[Run]  # every run, labelled: the legend
    with_figures: bool = True  # False: the text alone, for a caller that reads no PNG
    files: dict[str, str | bytes] = field(default_factory=dict)
    built: dict[tuple[str, str], Table] = field(default_factory=dict)

    def link(self, key: tuple[str, str]) -> str:
        a = anchor(*key)
        return f"{APPENDIX}#{a}" if key in self.in_appendix else f"#{a}"

    def cite(self, key: tuple[str, str]) -> str:
        return f"[Table {self.numbers[key]}]({self.link(key)})"
