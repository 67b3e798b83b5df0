"""Export a decision log for a warehouse: JSON lines or Parquet.

One record per decision, every column of the log plus its label (`correct`, `debate_correct`,
`label_source`, `label_time`, `label_changes`; null when unlabelled), in time order. Past one
machine each server keeps its own log; their exports concatenate (ids are unique per
completion, so a warehouse can de-duplicate on `id`).

JSON lines keep the JSON columns (reasons, features, tokens) as JSON values; Parquet stores
them as JSON text (their keys differ between routers, which a fixed Parquet struct cannot
hold). Both stream: rows come from a cursor and Parquet is written in row groups of
`PARQUET_BATCH_ROWS`, so memory does not grow with the log. Parquet needs pyarrow (`pip
install 'imad[parquet]'`). A file is written to a temporary name beside `--out` and renamed, so
a failed export never leaves half a file; a link is followed (its target is replaced, not the
link), a device or FIFO (`/dev/null`, `/dev/stdout`) is written in place, and the log itself
(or its journal) is refused as `--out`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import IO, Any

from imad.decision_log.store import LogStore
from imad.errors import ConfigError, DecisionLogError, MissingDependencyError

FORMATS = ("jsonl", "parquet")
PARQUET_BATCH_ROWS = 4_096
"""Rows per Parquet row group: what the export holds in memory at once."""
LABEL_FIELDS = (("correct", "bool"), ("debate_correct", "bool"), ("label_source", "string"),
                ("label_time", "float64"), ("label_changes", "int64"))


def export_log(store: LogStore, fmt: str, out: str | Path | None, *,
               since: float | None = None, model: str | None = None) -> int:
    """Write the log's rows as `fmt` to `out` (stdout for JSON lines when None); rows written."""
    if fmt not in FORMATS:
        raise ConfigError("--format", f"{fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt == "parquet" and out is None:
        raise ConfigError("--out", "Parquet is binary: give --out FILE.parquet")
    with closing(store.rows(since=since, model=model)) as rows:  # ended before the store closes
        if fmt == "parquet":
            return _atomic(Path(out), store.path, "wb", lambda handle: write_parquet(store, rows, handle))
        if out is None:
            return write_jsonl(rows, sys.stdout)
        return _atomic(Path(out), store.path, "w", lambda handle: write_jsonl(rows, handle))


def write_jsonl(rows: Iterable[dict[str, Any]], handle: IO[str]) -> int:
    count = 0
    for row in rows:
        handle.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
        count += 1
    return count


def write_parquet(store: LogStore, rows: Iterator[dict[str, Any]], handle: IO[bytes]) -> int:
    """Write `rows` as Parquet, `PARQUET_BATCH_ROWS` at a time, one row group each: memory
    stays that of one batch however long the log (the rows come from a cursor, not a list)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as error:
        raise MissingDependencyError("pyarrow", "pip install 'imad[parquet]'",
                                     "imad log export --format parquet") from error
    schema = parquet_schema(store, pa)
    as_text = [c.name for c in store.readable if c.codec == "json"]
    count = 0
    with pq.ParquetWriter(handle, schema) as writer:
        for batch in _batches(rows, PARQUET_BATCH_ROWS):
            for row in batch:
                for name in as_text:
                    if row[name] is not None:
                        row[name] = json.dumps(row[name], ensure_ascii=False)
            writer.write_batch(pa.RecordBatch.from_pylist(batch, schema=schema))
            count += len(batch)
    return count


def parquet_schema(store: LogStore, pa: Any) -> Any:
    """The Parquet columns of `store`'s log: each readable column by its SQLite type (booleans as
    bool, JSON columns as text), then the label fields."""
    types = {"TEXT": pa.string(), "REAL": pa.float64(), "INTEGER": pa.int64()}
    fields = [pa.field(c.name, pa.bool_() if c.codec == "bool" else types[c.sqlite_type])
              for c in store.readable]
    fields += [pa.field(name, getattr(pa, "bool_" if kind == "bool" else kind)())
               for name, kind in LABEL_FIELDS]
    return pa.schema(fields)


def _batches(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _atomic(path: Path, log: Path, mode: str, write) -> int:
    """Run `write(handle)` on a temporary file beside `path`'s target, then rename it onto
    that target (a device or FIFO is written in place: renaming onto `/dev/null` as root would
    replace the device with a file)."""
    if path.is_dir():
        raise DecisionLogError(f"--out {path} is a directory; give a file name")
    encoding = {"encoding": "utf-8"} if "b" not in mode else {}
    if path.exists() and not path.is_file():
        try:
            with open(path, mode, **encoding) as handle:
                return write(handle)
        except OSError as error:
            raise DecisionLogError(f"cannot write --out {path}: {error.strerror or error}") from error
    target = Path(os.path.realpath(path))
    folder = target.parent
    if _is_the_log(target, Path(os.path.realpath(log))):
        raise ConfigError("--out", f"{path} is the decision log being exported (or its journal); "
                          "give another file")
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    except OSError as error:
        raise DecisionLogError(f"cannot write --out {path}: {error.strerror or error} (is "
                               f"{folder} an existing, writable folder?)") from error
    try:
        os.fchmod(descriptor, _permissions(target))
        with os.fdopen(descriptor, mode, **encoding) as handle:
            count = write(handle)
        os.replace(temporary, target)
        return count
    except OSError as error:
        raise DecisionLogError(f"cannot write --out {path}: {error.strerror or error}") from error
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _is_the_log(target: Path, log: Path) -> bool:
    """Whether writing `target` would overwrite the SQLite log or one of its side files."""
    if target in (log, *(log.with_name(log.name + end) for end in ("-wal", "-shm", "-journal"))):
        return True
    try:
        return target.exists() and os.path.samefile(target, log)  # a hard link to it
    except OSError:
        return False


def _permissions(target: Path) -> int:
    """An existing file's permission bits, or a new file's under the umask (mkstemp's 0o600
    would hide an export from the warehouse's reader)."""
    if target.exists():
        return target.stat().st_mode & 0o777
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read from /proc where Linux shows it; elsewhere by setting it and
    setting it back (a moment in which another thread's new file would get umask 0)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0)
    os.umask(umask)
    return umask
