"""Rendering: the one formatter, tables over pandas frames, runs side by side, the document.

Experiments' report modules import from here; nothing here imports experiments/."""
from study.report.document import APPENDIX, GENERATED_FOLDERS, LABELS, anchor, render, write_report
from study.report.format import PROSE_FIGURES, TABLE_FIGURES, names, number, shorten, text
from study.report.prose import answer, macros, say
from study.report.runs import (label_order, main_run, older_code, releases, side_by_side, span,
                               title)
from study.report.table import Table, csv, frame, latex, markdown, tidy

__all__ = ["APPENDIX", "GENERATED_FOLDERS", "LABELS", "PROSE_FIGURES", "TABLE_FIGURES", "Table",
           "anchor", "csv", "frame", "answer", "label_order", "latex", "macros", "main_run",
           "markdown", "names", "number", "older_code", "releases", "render", "say", "shorten",
           "side_by_side", "span", "text", "tidy", "title", "write_report"]
