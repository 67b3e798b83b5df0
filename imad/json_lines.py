"""Read a JSON-lines file one object at a time, naming the file and line of anything wrong.

Dataset files and corpus files are both JSON lines, and both come from outside: hand-edited,
converted on another system, cut off by a crash. `iter_json_objects` decodes each line on its
own, so a bad byte, a line that is not JSON, or a line that is JSON but not an object (a list,
a number, `null`) is a `DatasetError` that names `file:line` and what was found there — never
a bare `UnicodeDecodeError` or `AttributeError`. Reading stops at the first bad line and the
file is never changed, so the records around it are kept.

Accepted without complaint: a UTF-8 byte-order mark at the start of the file (Windows editors
write one), CRLF line ends, and blank lines (skipped).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from imad.errors import DatasetError
from imad.jsonio import DEFAULT_MAX_LINES_BYTES, UntrustedJSONError, loads_untrusted, read_regular_file

BYTE_ORDER_MARK = b"\xef\xbb\xbf"


def check_is_file(path: Path, what: str) -> None:
    """A missing path or a directory is a `DatasetError` that says which."""
    if path.is_dir():
        raise DatasetError(f"{what} {path} is a directory, not a file")
    if not path.is_file():
        raise DatasetError(f"{what} {path} not found")


def iter_json_objects(path: Path, *, allow_torn_tail: bool = False
                      ) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line number, object)` for every non-blank line of `path`, in order.

    `allow_torn_tail`: a final line with no newline that does not decode is skipped instead of
    being an error (a write cut off by a crash; see `imad.corpus_records`).
    """
    check_is_file(path, "file")
    data = read_lines_file(path)
    lines = data.split(b"\n")
    torn_tail = len(lines) - 1 if allow_torn_tail and not data.endswith(b"\n") else -1
    for index, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            yield index + 1, decode_json_object(raw)
        except DatasetError as error:
            if index == torn_tail:
                return
            raise DatasetError(f"{path}:{index + 1}: {error}") from error


def read_lines_file(path: Path, *, what: str = "", max_bytes: int = DEFAULT_MAX_LINES_BYTES) -> bytes:
    """The bytes of a JSON-lines file without its byte-order mark; a file that is too large, not
    a regular file or unreadable is a `DatasetError` naming it (`what`: "label file" …)."""
    named = f"{what} {path}" if what else str(path)
    try:
        data = read_regular_file(path, max_bytes=max_bytes)
    except UntrustedJSONError as error:
        raise DatasetError(f"{named}: {error}") from error
    except OSError as error:
        raise DatasetError(f"cannot read {named}: {error.strerror or error}") from error
    return data[len(BYTE_ORDER_MARK):] if data.startswith(BYTE_ORDER_MARK) else data


def decode_json_object(raw: bytes, *, unique_keys: bool = False) -> dict[str, Any]:
    """One line's bytes → a JSON object, or a `DatasetError` saying what the line holds instead
    (`unique_keys`: also for an object naming a key twice)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DatasetError(f"not UTF-8 (byte {raw[error.start]:#04x} at column {error.start + 1}); "
                           "convert the file to UTF-8") from error
    try:
        value = loads_untrusted(text, max_bytes=max(len(raw), 1), allow_nan=True,
                                check_strings=False, unique_keys=unique_keys)
    except UntrustedJSONError as error:  # not JSON, a 5,000-digit number, 100,000 nested [, NaN
        raise DatasetError(f"not valid JSON ({error})") from error
    if not isinstance(value, dict):
        raise DatasetError(f"a JSON {json_type(value)} where a JSON object {{…}} was expected")
    return value


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type: object, array, string, number, boolean, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    names = {dict: "object", list: "array", str: "string", int: "number", float: "number"}
    return names.get(type(value), type(value).__name__)
