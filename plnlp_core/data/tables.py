"""Reading a user's CSV or Parquet file into an Arrow table, each failure
one :class:`PLNLPError` naming the file and the fix."""
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from plnlp_core.errors import PLNLPError, first_line

READERS = {".csv": pa_csv.read_csv, ".parquet": pq.read_table}


def read_table(path: Path, role: str) -> pa.Table:
    """The table at ``path`` (the ``role`` file: ``"edge list"``), refused
    when missing, of another format, unreadable or without rows."""
    if not path.is_file():
        raise PLNLPError(f"the {role} file {path} does not exist; check the path.")
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise PLNLPError(f"the {role} file {path} is neither .csv nor .parquet; save it as one "
                         "of them.")
    try:
        table = reader(path) if path.stat().st_size else pa.table({})
    except (pa.ArrowException, OSError) as error:
        raise PLNLPError(f"the {role} file {path} could not be read as {path.suffix[1:]} "
                         f"({first_line(error)}); fix or export it again.") from error
    if table.num_rows == 0:
        raise PLNLPError(f"the {role} file {path} is empty; it needs a header and at least "
                         "one row.")
    return table


def require_columns(table: pa.Table, path: Path, names: Sequence[str]) -> None:
    """Refuses ``table`` unless it has each of ``names``, without empty cells."""
    missing = [name for name in names if name not in table.column_names]
    if missing:
        raise PLNLPError(f"{path} has no column {', '.join(missing)} (its columns: "
                         f"{', '.join(table.column_names)}); name its columns "
                         f"{', '.join(names)}, in a header line for a CSV.")
    empty = [name for name in names if table.column(name).null_count]
    if empty:
        raise PLNLPError(f"{path} has empty cells in column {', '.join(empty)}; fill or drop "
                         "those rows.")


def is_numeric(kind: pa.DataType) -> bool:
    """Whether a column of ``kind`` holds numbers."""
    return pa.types.is_integer(kind) or pa.types.is_floating(kind)
