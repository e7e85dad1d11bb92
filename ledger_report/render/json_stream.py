"""``calc --json``'s configurations, batch after batch, in row order: computed here, or in forked
worker processes side by side when there are several batches, more than one job and it is safe
to fork (the bytes do not depend on it).

A worker computes one batch and writes it to the output file itself, when the batch before it is
written (so the bytes come in row order, and nothing crosses between the processes but the
turn).  A batch that fails in a worker is done again here, so its rows before the failing one are
written and the error is raised as it always was.
"""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import threading
from typing import Any, Callable, Sequence

from ..engine import BATCH_ROWS, Batch
from ..report import DEFAULT
from .json_batch import write_batch

_FORKED: tuple | None = None  # (configurations, rows per batch, output fd, turn, batches written), for the workers


def default_jobs() -> int:
    """``LEDGER_REPORT_JOBS`` if it is a whole number, else the CPUs this process may run on."""
    text = os.environ.get("LEDGER_REPORT_JOBS", "").strip()
    if text.isdigit():
        return max(1, int(text))
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def write_configs(configs: Sequence[Any], out: Any, progress: Callable[[int], None], jobs: int | None = None,
                  rows: int = BATCH_ROWS) -> None:
    """Each configuration's document, ",\\n" between them, batch by batch (``rows`` a batch)."""
    batches = (len(configs) + rows - 1) // rows
    workers = min(default_jobs() if jobs is None else max(1, jobs), batches)
    fd = _fileno(out)
    if workers > 1 and fd is not None and _can_fork():
        out.flush()
        _in_workers(configs, fd, out, progress, workers, rows)
        return
    for k in range(batches):
        write_batch(_evaluated(configs, k, rows), out, k == 0, progress)


def _evaluated(configs: Sequence[Any], k: int, rows: int) -> Batch:
    return Batch.evaluate(list(configs[k * rows:(k + 1) * rows]), DEFAULT, together=True)


def _fileno(out: Any) -> int | None:
    try:
        return out.fileno()
    except (AttributeError, OSError, ValueError):  # io.BytesIO and the like: no file to share
        return None


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _in_workers(configs: Sequence[Any], fd: int, out: Any, progress: Callable[[int], None], workers: int, rows: int) -> None:
    """Batch k computed by a worker, which writes it to ``fd`` when batch k - 1 is written (the
    turn passes in batch order); a batch that fails is done again here, after the batches before it."""
    global _FORKED
    batches = (len(configs) + rows - 1) // rows
    ctx = multiprocessing.get_context("fork")
    turn = ctx.Condition()
    written = ctx.Value("q", 0, lock=False)  # batches written so far (guarded by ``turn``)
    _FORKED = (configs, rows, fd, turn, written)
    gc.collect()
    gc.freeze()  # the inherited objects out of the collector's reach: collecting would copy their pages
    try:
        with ctx.Pool(workers) as pool:
            for k, ok in enumerate(pool.imap(_write_in_worker, range(batches))):
                if not ok:
                    pool.terminate()  # the workers waiting for their turn
                    write_batch(_evaluated(configs, k, rows), out, k == 0, progress)
                    raise RuntimeError(f"batch {k} failed in a worker but not here")  # pragma: no cover
                progress(min(rows, len(configs) - k * rows))
    finally:
        _FORKED = None
        gc.unfreeze()


def _write_in_worker(k: int) -> bool:
    """In a worker: batch ``k`` computed, then written to the shared file in its turn; False
    (nothing written, the turn kept) where it fails."""
    configs, rows, fd, turn, written = _FORKED  # type: ignore[misc]
    buffer = io.BytesIO()
    try:
        write_batch(_evaluated(configs, k, rows), buffer, k == 0, lambda n: None)
    except Exception:
        return False
    body = memoryview(buffer.getbuffer())
    with turn:
        turn.wait_for(lambda: written.value == k)
        while body:
            body = body[os.write(fd, body):]
        written.value = k + 1
        turn.notify_all()
    return True
