"""How many worker processes render side by side: the caller's number, else ``LEDGER_REPORT_JOBS``,
else the CPUs this process may run on.  One rule for the handout and for ``calc --json``; and the
pause of the cyclic garbage collector that both take while they build many short-lived objects."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

from ..errors import LedgerError

JOBS_ENV = "LEDGER_REPORT_JOBS"


class JobsError(LedgerError):
    """``LEDGER_REPORT_JOBS`` is set to something other than a whole number of at least 1."""


def default_jobs() -> int:
    """``LEDGER_REPORT_JOBS`` where it is set (a whole number, at least 1), else the CPUs."""
    text = os.environ.get(JOBS_ENV, "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise JobsError(
                f"{JOBS_ENV} must be a whole number of worker processes, at least 1; found {text!r}."
            )
        return int(text)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Python's cyclic garbage collector paused while the block runs, resumed (if it was
    running) after it.  For work that builds many objects, short-lived or not (a handout's
    boxes and PDF objects, a JSON batch's lists and rows), where every collection would walk
    them for little: reference counting still frees what is not in a cycle, and the collector
    collects the rest on its own schedule once resumed."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
