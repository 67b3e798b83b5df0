"""One reader for JSON that imad did not write itself.

Python's `json` trusts its input: 100,000 nested `[` raise RecursionError, a 5,000-digit integer
raises a bare ValueError (the int-to-str limit), `NaN`, `Infinity` and `1e999` become floats no
strict JSON parser accepts, an escape such as `"\\ud800"` leaves a lone surrogate that crashes
every later encoder, and `Path.read_text` on a FIFO blocks for ever. Everything that reads JSON
from outside — upstream replies, checkpoints, budget state, corpus and dataset lines, request
bodies, debate replies — goes through `loads_untrusted` or `read_untrusted_file`, which refuse
each of these with one `UntrustedJSONError` saying what was wrong. Each caller maps it (and
OSError) to its own typed error, naming its file or its field.

The depth is counted by a linear scan before `json.loads` runs, so the parser never recurses
deeper than `max_depth`; integers are checked by length before `int()` sees them.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from typing import Any

from imad.text import first_lone_surrogate

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Largest JSON text accepted by default (a checkpoint config with OOD statistics is < 1 MiB)."""
DEFAULT_MAX_DEPTH = 100
"""Deepest nesting of arrays and objects accepted by default (real documents nest < 10 deep)."""
DEFAULT_MAX_INT_DIGITS = 100
"""Longest integer literal accepted by default, well under Python's 4,300-digit limit."""
DEFAULT_MAX_LINES_BYTES = 1024 * 1024 * 1024
"""Largest JSON-lines file (a corpus or dataset) read whole by default."""

BYTE_ORDER_MARK = b"\xef\xbb\xbf"

# A string (an unterminated one runs to the end of the text) or one bracket. The string pattern is
# the unrolled loop `"[^"\\]*(?:\\.[^"\\]*)*`, which cannot backtrack, so the scan is linear.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class UntrustedJSONError(ValueError):
    """JSON from outside was refused; the message says why (size, depth, digits, NaN, UTF-8…)."""


class RepeatedKeyError(UntrustedJSONError):
    """An object names `key` twice (read with `unique_keys`): which value was meant is unknown."""

    def __init__(self, key: str) -> None:
        super().__init__(f"an object names the key {key!r} twice")
        self.key = key


def loads_untrusted(data: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES,
                    max_depth: int = DEFAULT_MAX_DEPTH,
                    max_int_digits: int = DEFAULT_MAX_INT_DIGITS, allow_nan: bool = False,
                    check_strings: bool = True, unique_keys: bool = False) -> Any:
    """The value of the JSON text `data`, or UntrustedJSONError saying why it was refused.

    Bytes must be UTF-8 (a leading byte-order mark is skipped); a string must be valid Unicode.
    `allow_nan` lets `NaN`/`Infinity` through for formats imad writes with them (a checkpoint's
    metrics); every numeric field read from them must still be checked finite by its reader.
    `check_strings=False` leaves lone surrogates from `\\ud800` escapes to a caller that refuses
    them field by field with a more precise message (request bodies, dataset lines) or keeps
    them (a corpus stores a model's raw text as it came). `unique_keys` refuses an object that
    names a key twice (`{"correct": true, "correct": false}`), which `json` reads as its last.
    """
    text = _text_of(data, max_bytes)
    _check_depth(text, max_depth)
    try:
        value = json.loads(text, parse_constant=float if allow_nan else _refuse_constant,
                           parse_int=lambda literal: _bounded_int(literal, max_int_digits),
                           parse_float=float if allow_nan else _finite_float,
                           object_pairs_hook=_unique_object if unique_keys else None)
    except json.JSONDecodeError as error:
        raise UntrustedJSONError(f"{error.msg} at line {error.lineno} column {error.colno}") from None
    except RecursionError:  # unreachable after _check_depth, kept so no RecursionError escapes
        raise UntrustedJSONError("nested too deeply") from None
    if check_strings and _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(value)
    return value


def read_untrusted_file(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES,
                        max_depth: int = DEFAULT_MAX_DEPTH,
                        max_int_digits: int = DEFAULT_MAX_INT_DIGITS, allow_nan: bool = False,
                    check_strings: bool = True, unique_keys: bool = False) -> Any:
    """The JSON value in the regular file `path` (see `read_regular_file`, `loads_untrusted`).

    Raises OSError when the file cannot be opened and UntrustedJSONError for everything else.
    """
    data = read_regular_file(path, max_bytes=max_bytes)
    return loads_untrusted(data, max_bytes=max_bytes, max_depth=max_depth,
                           max_int_digits=max_int_digits, allow_nan=allow_nan,
                           check_strings=check_strings)


def read_regular_file(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `max_bytes` bytes.

    A FIFO, socket, device or directory is refused without reading (opened with O_NONBLOCK, so a
    FIFO cannot block); so is a file whose content does not match its size, as kernel files in
    /proc and /sys (size 0 or 4096, whatever they hold) and files being rewritten do not.
    Symlinks are followed: a link to a regular file is read, one to /dev/zero is refused.
    """
    _refuse_non_regular(os.stat(path).st_mode)
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
                         | getattr(os, "O_CLOEXEC", 0))
    try:
        status = os.fstat(descriptor)  # the file opened, not the one stat() saw
        _refuse_non_regular(status.st_mode)
        if status.st_size > max_bytes:
            raise UntrustedJSONError(f"the file is {status.st_size:,} bytes, over the limit of "
                                     f"{max_bytes:,}")
        data = _read_at_most(descriptor, status.st_size + 1)
    finally:
        os.close(descriptor)
    if len(data) != status.st_size:
        raise UntrustedJSONError(f"the file holds {'more' if len(data) > status.st_size else 'less'} "
                                 f"than its size of {status.st_size:,} bytes: it is a kernel file "
                                 "(/proc, /sys) or was changed while read")
    return data


def _text_of(data: str | bytes, max_bytes: int) -> str:
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if len(raw) > max_bytes:
            raise UntrustedJSONError(f"{len(raw):,} bytes, over the limit of {max_bytes:,}")
        if raw.startswith(BYTE_ORDER_MARK):
            raw = raw[len(BYTE_ORDER_MARK):]
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise UntrustedJSONError(f"not UTF-8 (byte {raw[error.start]:#04x} at offset "
                                     f"{error.start})") from None
    if not isinstance(data, str):
        raise UntrustedJSONError(f"expected JSON text (str or bytes), got {type(data).__name__}")
    if len(data) > max_bytes or len(data.encode("utf-8", "surrogatepass")) > max_bytes:
        raise UntrustedJSONError(f"{len(data):,} characters, over the limit of {max_bytes:,} bytes")
    position = first_lone_surrogate(data)
    if position is not None:
        raise UntrustedJSONError(f"not valid Unicode text (a lone surrogate "
                                 f"U+{ord(data[position]):04X} at character {position})")
    return data


def _check_depth(text: str, max_depth: int) -> None:
    """Refuse nesting deeper than `max_depth` by a linear scan that skips strings."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    for token in _STRING_OR_BRACKET.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth > max_depth:
                raise UntrustedJSONError(f"nested too deeply (more than {max_depth} levels of "
                                         f"arrays and objects, at character {token.start()})")
        elif char in "]}":
            depth -= 1


def _refuse_constant(name: str) -> None:
    raise UntrustedJSONError(f"{name} is not a JSON number (strict JSON has no NaN or Infinity)")


def _bounded_int(literal: str, max_digits: int) -> int:
    digits = len(literal) - literal.startswith("-")
    if digits > max_digits:
        raise UntrustedJSONError(f"an integer of {digits:,} digits (at most {max_digits:,} "
                                 f"accepted): {literal[:20]}…")
    return int(literal)


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        shown = literal if len(literal) <= 20 else literal[:20] + "…"
        raise UntrustedJSONError(f"the number {shown} is beyond the range of a float "
                                 "(strict JSON has no Infinity)")
    return value


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        raise RepeatedKeyError(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return value


def _refuse_lone_surrogates(value: Any) -> None:
    """Walk `value` without recursion; a string holding a lone surrogate is refused."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            position = first_lone_surrogate(item)
            if position is not None:
                raise UntrustedJSONError(f"a string holds a lone surrogate U+{ord(item[position]):04X} "
                                         f"(not valid Unicode text): {item[:40]!r}")


def _refuse_non_regular(mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket")]
    kind = next((name for test, name in kinds if test(mode)), "not a file")
    raise UntrustedJSONError(f"{kind}, not a regular file")


def _read_at_most(descriptor: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(descriptor, min(remaining, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
