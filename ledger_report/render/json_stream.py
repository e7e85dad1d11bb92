"""``calc --json``'s configurations, batch after batch, in row order: computed here, or in forked
worker processes side by side when there are several batches, more than one job and it is safe
to fork (the bytes do not depend on it).

A worker computes one batch and writes it to the output file itself, when the batch before it is
written (so the bytes come in row order, and nothing crosses between the processes but the
turn).  A batch that fails in a worker is done again here, so its rows before the failing one are
written and the error is raised as it always was.

``write_file`` goes further for a .csv file: each worker reads the file itself and checks only
the rows of its own batches (batch k is worker k mod the workers'), so the rows are read side by
side too and no configuration crosses between the processes.  Nothing is written until every
worker has read its rows without a problem and no name repeats across them; otherwise the file
is read here as always (which reports the problems as it always did).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Sequence

from ..engine import BATCH_ROWS, Batch, PackedConfigs
from ..inputs import CSV_SUFFIXES, name_key, read_configs
from ..report import DEFAULT
from .json_batch import write_batch
from .workers import default_jobs, forked_child, no_cyclic_gc

# Rows a worker evaluates and writes at once: a batch has a fixed cost (a pass over the registry,
# the writer's columns), spread here over twice the engine's batch; about 360 MB a worker at the peak.
JSON_BATCH_ROWS = 2 * BATCH_ROWS

_FORKED: tuple | None = (
    None  # (configurations, rows per batch, output fd, turn, batches written), for the workers
)


def write_configs(
    configs: Sequence[Any],
    out: Any,
    progress: Callable[[int], None],
    jobs: int | None = None,
    rows: int = JSON_BATCH_ROWS,
) -> None:
    """Each configuration's document, ",\\n" between them, batch by batch (``rows`` a batch)."""
    batches = (len(configs) + rows - 1) // rows
    workers = min(default_jobs() if jobs is None else max(1, jobs), batches)
    fd = _fileno(out)
    if workers > 1 and fd is not None and _can_fork():
        out.flush()
        _in_workers(configs, fd, out, progress, workers, rows)
        return
    for k in range(batches):
        _write_batch(_part(configs, k, rows), out, k == 0, progress)


def _write_batch(
    part: Sequence[Any], out: Any, first: bool, progress: Callable[[int], None]
) -> None:
    """A batch's configurations (``part``) evaluated together and written (``write_batch``), the
    cyclic garbage collector paused meanwhile: a batch's arrays, lists and texts are many and in no
    cycle, and collections walking them were ~5 % of the time."""
    with no_cyclic_gc():
        write_batch(Batch.evaluate(part, DEFAULT, together=True), out, first, progress)


def _part(configs: Sequence[Any], k: int, rows: int) -> Sequence[Any]:
    """Batch ``k``'s configurations (held packed where they are: built only where one is read)."""
    at = slice(k * rows, (k + 1) * rows)
    return configs.part(at) if isinstance(configs, PackedConfigs) else list(configs[at])


def _fileno(out: Any) -> int | None:
    try:
        return out.fileno()
    except (AttributeError, OSError, ValueError):  # io.BytesIO and the like: no file to share
        return None


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _in_workers(
    configs: Sequence[Any],
    fd: int,
    out: Any,
    progress: Callable[[int], None],
    workers: int,
    rows: int,
) -> None:
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
        # a worker dies with this process (workers.forked_child)
        with ctx.Pool(workers, initializer=forked_child, initargs=(os.getpid(),)) as pool:
            for k, ok in enumerate(pool.imap(_write_in_worker, range(batches))):
                if not ok:
                    pool.terminate()  # the workers waiting for their turn
                    _write_batch(_part(configs, k, rows), out, k == 0, progress)
                    raise RuntimeError(
                        f"batch {k} failed in a worker but not here"
                    )  # pragma: no cover
                progress(min(rows, len(configs) - k * rows))
    finally:
        _FORKED = None
        gc.unfreeze()


class _Held:
    """What a batch writes, held in one buffer that the worker's next batches use again (its
    memory is not given back and taken anew for each batch)."""

    def __init__(self) -> None:
        self.buffer, self.size = bytearray(), 0

    def write(self, data: bytes) -> None:
        end = self.size + len(data)
        self.buffer[self.size : end] = data
        self.size = end

    def written(self) -> memoryview:
        """What was written since the last call; the buffer is then free for the next batch."""
        body, self.size = memoryview(self.buffer)[: self.size], 0
        return body


def _write_all(fd: int, view: memoryview) -> None:
    """All of ``view`` written to ``fd``, then the view released (so its buffer may grow again)."""
    with view:
        done = 0
        while done < len(view):
            done += os.write(fd, view[done:])


def _write_in_worker(k: int) -> bool:
    """In a worker: batch ``k`` computed, then written to the shared file in its turn; False
    (nothing written, the turn kept) where it fails."""
    configs, rows, fd, turn, written = _FORKED  # type: ignore[misc]
    return _write_in_turn(_part(configs, k, rows), k, fd, turn, written)


def _write_in_turn(
    part: Sequence[Any], k: int, fd: int, turn: Any, written: Any, held: _Held | None = None
) -> bool:
    """Batch ``k`` (its configurations ``part``) computed, then written to ``fd`` when the
    batches before it are; False (nothing written, the turn kept) where it fails."""
    held = held or _Held()
    try:
        _write_batch(part, held, k == 0, lambda n: None)
    except Exception:
        held.written()
        return False
    with turn:
        turn.wait_for(lambda: written.value == k)
        _write_all(fd, held.written())
        written.value = k + 1
        turn.notify_all()
    return True


# -- a whole .csv file, read in the workers ------------------------------------------------------


def write_file(
    path: str,
    out: Any,
    begin: Callable[[int], Callable[[int], None]],
    jobs: int | None = None,
    rows: int = JSON_BATCH_ROWS,
) -> bool:
    """The documents of the .csv file's configurations, read and computed in forked workers:
    ``begin(rows in the file)`` is called once every row is read without a problem (it writes
    what comes before the documents and gives the progress callback).  False, with nothing
    written, where the file is not a .csv, one process is to do it, or a worker met a problem."""
    workers = default_jobs() if jobs is None else max(1, jobs)
    fd = _fileno(out)
    if (
        workers < 2
        or fd is None
        or not _can_fork()
        or Path(path).suffix.lower() not in CSV_SUFFIXES
    ):
        return False
    rows = _even_batches(path, rows, workers)
    ctx = multiprocessing.get_context("fork")
    turn, written = (
        ctx.Condition(),
        ctx.Value("q", 0, lock=False),
    )  # batches written (guarded by turn)
    out.flush()
    links, procs = [], []
    gc.collect()
    gc.freeze()  # the inherited objects out of the collector's reach: collecting would copy their pages
    try:
        for w in range(workers):
            here, there = ctx.Pipe()
            procs.append(
                ctx.Process(
                    target=_file_worker,
                    args=(
                        path,
                        w,
                        workers,
                        rows,
                        fd,
                        turn,
                        written,
                        there,
                        (os.getpid(), [here, *links]),
                    ),
                    daemon=True,
                )
            )
            procs[-1].start()
            there.close()
            links.append(here)
    finally:
        gc.unfreeze()
    try:
        total = _all_read(links)
        if total is None:
            return False
        _lead(path, out, begin(total), links, total, rows)
        return True
    finally:
        for link in links:
            link.close()
        for proc in procs:
            proc.join(timeout=1)
            if proc.is_alive():
                proc.terminate()  # waiting for a turn that will not come (a batch failed)
                proc.join()


def _even_batches(path: str, most: int, workers: int) -> int:
    """Rows a batch, at most ``most``, so that each worker has as many batches of about as many
    rows (none waits at the end for another's last batch): from the file's lines, which bound its
    rows, so every worker finds the same figure before reading.  The bytes written do not depend
    on it."""
    try:
        lines = Path(path).read_bytes().count(b"\n") + 1
    except OSError:
        return most  # the workers' reading reports it
    rounds = -(-lines // (most * workers))
    return max(1, -(-lines // (rounds * workers)))


def _all_read(links: list) -> int | None:
    """The rows in the file, where every worker read its rows without a problem and no name is
    in two workers' rows, else None; each worker is told to go on, or not."""
    parts = [_received(link) for link in links]
    names = [p[1] for p in parts if p is not None]
    good = len(names) == len(parts) and len(set().union(*names)) == sum(map(len, names))
    for link, part in zip(links, parts):
        if part is not None:
            link.send(good)
    return sum(p[0] for p in parts) if good else None  # type: ignore[index]


def _lead(
    path: str, out: Any, progress: Callable[[int], None], links: list, total: int, rows: int
) -> None:
    """The workers' batches counted as they are written; a batch that fails is done again
    here (the batches before it written), where it raises as it always did."""
    out.flush()  # what ``begin`` wrote, before the workers write
    for link in links:
        link.send(True)
    active, batches, done = list(links), (total + rows - 1) // rows, 0
    while done < batches:
        if not active:
            raise RuntimeError(f"the workers stopped with {batches - done} batches not written")
        link = wait(active)[0]
        message = _received(link)
        if message is None:  # a worker done with its batches (or gone)
            active.remove(link)
            continue
        kind, k = message
        if kind == "raised":
            raise k
        if kind == "failed":
            _redo(path, out, k, rows, progress)
        progress(min(rows, total - k * rows))
        done += 1


def _received(link: Any) -> Any:
    """The next message on a link, or None where the worker is gone."""
    try:
        return link.recv()
    except (EOFError, OSError):
        return None


def _redo(path: str, out: Any, k: int, rows: int, progress: Callable[[int], None]) -> None:
    """Batch ``k``, which failed in a worker, done again here: the file read as always, then
    the batch written, which raises where the worker's did."""
    configs = PackedConfigs()
    read_configs(path, sink=configs.append, sink_columns=configs.extend_columns)
    _write_batch(_part(configs, k, rows), out, k == 0, progress)
    raise RuntimeError(f"batch {k} failed in a worker but not here")  # pragma: no cover


def _file_worker(
    path: str,
    w: int,
    workers: int,
    rows: int,
    fd: int,
    turn: Any,
    written: Any,
    link: Any,
    parent: tuple[int, list],
) -> None:
    """In a worker: the rows of batches w, w + workers, w + 2 workers... read and checked, and
    (how many, their names) sent, or None where there is a problem; then, told to go on, each
    batch written in its turn (a batch that fails: said once the batches before it are written).
    ``parent``: the parent's pid and the pipe ends the worker must not hold (``forked_child``)."""
    forked_child(*parent)
    configs = PackedConfigs()
    try:
        with no_cyclic_gc():  # the rows read are many objects, in no cycle
            read_configs(
                path,
                sink=configs.append,
                keep=lambda i: i // rows % workers == w,
                sink_columns=configs.extend_columns,
            )
    except Exception:
        link.send(None)
        return
    gc.collect()
    gc.freeze()  # the rows read stay to the end: out of the collections' reach
    link.send((len(configs), {name_key(str(name)) for name in configs.column("name")}))
    if _received(link):
        try:
            _write_own(configs, w, workers, rows, fd, turn, written, link)
        except (
            Exception
        ) as exc:  # the output gone (a closed pipe) and the like: raised by the parent
            link.send(("raised", exc))


def _write_own(
    configs: PackedConfigs,
    w: int,
    workers: int,
    rows: int,
    fd: int,
    turn: Any,
    written: Any,
    link: Any,
) -> None:
    """A worker's batches (w, w + workers...) written in their turns, each said done; a batch that
    fails is said once the batches before it are written, and the worker stops."""
    held = _Held()
    for j, k in enumerate(range(w, (len(configs) + rows - 1) // rows * workers, workers)):
        if not _write_in_turn(_part(configs, j, rows), k, fd, turn, written, held):
            with turn:
                turn.wait_for(lambda: written.value == k)
            link.send(("failed", k))
            return
        link.send(("done", k))
