"""A sweep on two cores (``to_frame``, ``calc --csv`` and ``--json``): a CSV file's rows split at a
physical line, the rows after it read and worked through by a forked process while this one does
those before it.  Each half is read as the whole file is (the same reader, the header read by
both), so its values are the ones one reading gives; what holds across the rows (each name once,
at most ``MAX_ROWS`` rows) is checked on the two halves together, and a half with a problem has
the file read again whole, so that the refusal is the one a single reading gives."""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from .engine import NotFiniteError
from .errors import InputError, OutputError
from .inputs import name_key
from .inputs.csv import CSV_SUFFIXES, MAX_CSV_BYTES
from .inputs.files import read_bounded
from .inputs.tables import MAX_ROWS
from .progress import Progress, counter
from .render.workers import can_fork, default_jobs, fork, receive_outcome, stopped_error

SHARE_PERCENT = 52  # of a split file's lines, read by this process (the other also spills)
SPILL_KB_PER_ROW = 17  # the most a row takes in the spill: a calc --json line (16.6 kB, bench rows)


def split(source: Any, chunk_rows: int) -> int | None:
    """The physical line after which a sweep of ``source`` is split, ``SHARE_PERCENT`` of the way
    through a CSV file of more than two chunks' lines, where two processes may run; else ``None``
    (a file the reader refuses included: it names the problem)."""
    if not isinstance(source, (str, Path)) or Path(source).suffix.lower() not in CSV_SUFFIXES:
        return None
    try:
        lines = read_bounded(Path(source), str(source), MAX_CSV_BYTES).count(b"\n")
    except InputError:
        return None
    if lines <= 2 * chunk_rows or not can_fork() or default_jobs() < 2:
        return None  # (LEDGER_REPORT_JOBS read only where a process may be forked)
    return lines * SHARE_PERCENT // 100


@contextlib.contextmanager
def sweep(
    read: Callable[..., list], source: Any, work: Callable, progress: Progress | None, rows: int
) -> Iterator[tuple[Any, Any]]:
    """``(work(configs, tick, None), None)`` of the rows of ``source``; or, where :func:`split`
    splits it (``rows``: a chunk's rows), ``(work(rows up to the split, tick, None), spill)``,
    ``spill`` the file (:func:`_spill`) that ``work(rows after it, tick, spill)`` wrote in a forked
    process meanwhile, open while the block runs.  The same values either way, and the rows either
    half's figures refuse named in one refusal.  ``read(source, lines)``: the configurations that
    begin on ``lines`` (every one when ``None``); ``tick(rows)`` tells ``progress`` of rows done."""
    at = split(source, rows)
    spill = None if at is None else _spill()
    if spill is None:
        yield _one_reading(read, source, work, progress), None
    else:
        with spill, _in_halves(read, source, at, work, progress, spill) as halves:
            yield halves


def _spill() -> BinaryIO | None:
    """Where the second half's output waits: a file in memory where the system has them (Linux's
    memfd; at most the rows after ``SHARE_PERCENT`` of ``MAX_ROWS``, ``SPILL_KB_PER_ROW`` each; no
    disk page cache, which took up to 1.1 s more for 360 MB: bench/bench_csv.py), else a file."""
    with contextlib.suppress(AttributeError, OSError):  # (AttributeError: no memfd_create here)
        return open(os.memfd_create("ledger-report-spill"), "w+b")
    with contextlib.suppress(OSError):
        return tempfile.TemporaryFile()
    return None  # (no writable temporary folder: one process does it all)


def _one_reading(read: Callable, source: Any, work: Callable, progress: Progress | None) -> Any:
    configs = read(source)
    return work(configs, counter(progress, len(configs)), None)


@contextlib.contextmanager
def _in_halves(read, source, at: int, work, progress, spill) -> Iterator[tuple[Any, Any]]:
    """The two halves (:func:`sweep`); where they have a problem, the file read again whole, to
    raise as one reading does."""
    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
    rest = range(at + 1, sys.maxsize)
    second = functools.partial(_second, read, source, rest, work, send, spill)
    outcome, process = fork(second, RuntimeError, [receive])
    send.close()
    try:
        try:
            configs = read(source, range(at + 1))
            names = receive.recv()
        except (InputError, EOFError):
            configs, names = [], None
        if names is None or len(configs) + len(names) > MAX_ROWS or _shared(configs, names):
            process.kill()
            yield _one_reading(read, source, work, progress), None  # raises what one reading finds
            return
        # the first half's rows told for both halves' (they go side by side, at about one pace)
        total, own = len(configs) + len(names), max(1, len(configs))
        tick = counter(progress and (lambda n, _: progress(n * total // own, total)), own)
        refused: list = []
        mine = None
        try:
            mine = work(configs, tick, None)
        except NotFiniteError as err:
            refused.extend(err.problems)
        try:
            receive_outcome(outcome, process, stopped_error("making the second half of the rows"))
        except NotFiniteError as err:
            refused.extend(err.problems)
        if refused:
            raise NotFiniteError(refused)
        spill.seek(0)
        yield mine, spill
    finally:
        process.kill()
        process.join()
        receive.close()
        outcome.close()


def _second(read: Callable, source: Any, lines: range, work: Callable, send: Any, spill) -> None:
    """The forked half: its rows read, their names sent (``None``: a problem), then worked."""
    try:
        configs = read(source, lines)
    except InputError:
        send.send(None)
        return
    send.send([name_key(c.name) for c in configs])
    send.close()
    try:
        work(configs, lambda _rows: None, spill)  # (no progress from here)
        spill.flush()
    except OSError as err:  # memory or the temporary folder full, as a rule
        raise OutputError(
            f"The second half of the rows could not be held ({err.strerror or err}; up to"
            f" {SPILL_KB_PER_ROW} kB a row, in memory, else in {tempfile.gettempdir()} as TMPDIR"
            f" sets). Set LEDGER_REPORT_JOBS=1 to work in one process."
        ) from None


def _shared(configs: list, names: list[str]) -> bool:
    """A name in both halves (a problem one reading of the file names)."""
    return not {name_key(c.name) for c in configs}.isdisjoint(names)
