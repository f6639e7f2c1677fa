"""A result table: rows of one kind, stored as Parquet.

A row is a dict of column -> value; a value is a number, a flag, a text, None, a list of
values (nested lists for a matrix) or a dict of values (a struct: a few named numbers, such as
a timing's median and quartiles). Parquet keeps each column's type (a float64 stays float64,
-0.0 stays -0.0, NaN stays NaN), compresses what repeats (dictionary encoding, then zstd), and
opens in pandas (`pd.read_parquet`), DuckDB (`SELECT * FROM 'atlas_cells/*.parquet'`) and
polars without this code. A column whose rows mix texts with numbers is refused: a measured
error goes in its own column, `error`.

Read back, a row has every column of its table (None where it had none), and a struct keeps
only the fields its row had.
"""
import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from study.errors import StudyError, first_error_line


class TableError(StudyError):
    """Rows that make no table: the message names the column."""


def _plain(value):
    """A value as Arrow takes it: tuples and arrays as lists, numpy scalars as Python's."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def to_arrow(rows: list[dict], name: str = "table") -> pa.Table:
    """The rows as one Arrow table, a column per key in the order keys first appear."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    arrays = {}
    for column in columns:
        values = [_plain(row.get(column)) for row in rows]
        try:
            arrays[column] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise TableError(f"{name}: column {column!r} mixes kinds of value "
                             f"({first_error_line(exc)})") from None
        if pa.types.is_struct(arrays[column].type) and arrays[column].type.num_fields == 0:
            raise TableError(f"{name}: column {column!r} holds only empty dicts")
    return pa.table(arrays)


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def read_table(path: str) -> pa.Table:
    try:
        # ParquetFile skips dataset discovery, and one thread is faster on files this small
        return pq.ParquetFile(path).read(use_threads=False)
    except (OSError, pa.ArrowException) as exc:
        raise StudyError(f"corrupt result table {path}: {first_error_line(exc)}") from None


def _without_nulls(value):
    """A struct as its row had it: Arrow gives every field of the column's struct to every row."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _has_struct(kind: pa.DataType) -> bool:
    if pa.types.is_struct(kind):
        return True
    return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and \
        _has_struct(kind.value_type)


def rows_of(table: pa.Table) -> list[dict]:
    """The table's rows as dicts (the inverse of to_arrow)."""
    rows = table.to_pylist()
    structs = [field.name for field in table.schema if _has_struct(field.type)]
    for row in rows:
        for column in structs:
            row[column] = _without_nulls(row[column])
    return rows


class Table:
    """One table of a run: rows held in memory, or a Parquet file read on first use."""

    def __init__(self, rows: list[dict] | None = None, path: str | None = None):
        self.path = path
        self._arrow: pa.Table | None = None
        self._rows = rows
        self._frame: pd.DataFrame | None = None

    def arrow(self) -> pa.Table:
        if self._arrow is None:
            self._arrow = read_table(self.path) if self.path else to_arrow(self._rows or [])
        return self._arrow

    def rows(self) -> list[dict]:
        if self._rows is None:
            self._rows = rows_of(self.arrow())
        return self._rows

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame (Arrow's types: a list column holds arrays)."""
        if self._frame is None:
            self._frame = self.arrow().to_pandas()
        return self._frame
