"""Every file the reader opens (an input, a config.json, a prices file): a regular file, read
to a bound.  A FIFO would block the open for good and a symlink to /dev/zero would be read until
memory runs out; both are refused from the opened descriptor, before any byte is read."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO, NoReturn

from ..errors import InputError, Problem

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def fail(
    label: str, expected: str, found: str, row: int | None = None, row_label: str = "row"
) -> NoReturn:
    """Refuse a file with one problem (the exception being handled, if any, is not chained)."""
    raise InputError(Problem(label, row, None, expected, found, row_label=row_label)) from None


def unreadable(label: str, exc: Exception) -> NoReturn:
    fail(label, "a readable file", f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}")


def open_regular(path: Path, label: str) -> BinaryIO:
    """The file opened for reading in binary, or ``InputError`` where it is not a regular file
    (a pipe is opened without waiting for a writer, then refused)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        fail(label, "an existing file", "no such file")
    except (OSError, ValueError) as exc:
        unreadable(label, exc)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = next((word for test, word in _KINDS if test(mode)), "not a regular file")
        fail(label, "a regular file", what)
    if flags & getattr(os, "O_NONBLOCK", 0):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_bounded(path: Path, label: str, max_bytes: int, what: str = "file") -> bytes:
    """At most ``max_bytes`` (whole MiB) of a regular file; a larger one is refused (the bound
    holds whatever size the file claims, and while it grows)."""
    with open_regular(path, label) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            unreadable(label, exc)
    if len(data) > max_bytes:
        fail(label, f"a {what} of at most {max_bytes // 2**20} MiB", "a larger file")
    return data
