"""Worker processes: how many render side by side, what a forked worker does first so that it
never outlives its parent (:func:`forked_child`: a worker holding a read end of its own pipe, or
a sibling's, would block for good writing into it once the parent died), work run in forked
processes side by side (:func:`run_forked`) and one piece beside the caller (:class:`Beside`); with
the collector pause and the environment variable hold that renders share."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..errors import LedgerError

JOBS_ENV = "LEDGER_REPORT_JOBS"


class JobsError(LedgerError):
    """``LEDGER_REPORT_JOBS`` is set to something other than a whole number of at least 1."""


def default_jobs() -> int:
    """``LEDGER_REPORT_JOBS`` where it is set (a whole number, at least 1), else the CPUs.  Called
    only where workers may be forked and no number was given (``-j``, ``jobs=``), so a command
    that forks nothing (gpus, models, template) never reads the variable."""
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
    running) after it: for work that builds many objects, which every collection would walk for
    little (reference counting still frees what is not in a cycle)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_ENV_LOCK = threading.Lock()
_ENV_HELD: dict[str, list] = {}  # name -> [renders holding it, the value before the first]


@contextlib.contextmanager
def env_while_running(name: str, value: str) -> Iterator[None]:
    """``os.environ[name]`` set to ``value`` (unless the caller had set it) while the block runs,
    and as it was once the last block holding it ends, whatever threads run them (a thread that
    saved and restored it itself could take another's value for the caller's)."""
    with _ENV_LOCK:
        if name not in _ENV_HELD:  # the first block: the caller's value, or ours
            _ENV_HELD[name] = [0, os.environ.get(name)]
            os.environ.setdefault(name, value)
        held = _ENV_HELD[name]
        held[0] += 1
    try:
        yield
    finally:
        with _ENV_LOCK:
            held[0] -= 1
            if held[0] == 0:
                if held[1] is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = held[1]
                del _ENV_HELD[name]


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def stopped_error(what: str) -> Callable[[Any], Exception]:
    """The error for a process doing ``what`` that died without sending (its exit code)."""
    return lambda code: RuntimeError(f"the process {what} stopped (exit code {code})")


def receive_outcome(conn: Any, process: Any, stopped: Callable[[Any], Exception]) -> Any:
    """What a forked worker sent (:func:`fork`): the value, or the exception raised here;
    ``stopped(exit code)`` is raised where the worker died without sending.  Closes ``conn``."""
    try:
        ok, payload = conn.recv()
    except EOFError:
        process.join()
        raise stopped(process.exitcode) from None
    finally:
        conn.close()
    process.join()
    if not ok:
        raise payload
    return payload


def forked_child(parent_pid: int, close: Iterable[Any] = ()) -> None:
    """What a forked worker does first: have the kernel send it SIGKILL when the parent dies
    (Linux, prctl(2) ``PR_SET_PDEATHSIG`` through ctypes; elsewhere the pipe ends it closes still
    end it at its next write), exit now if the parent is already gone (it died between the fork
    and this call), close the connections and file descriptors ``close`` (the read ends of its
    own and its siblings' pipes, inherited across ``fork``), and take SIGTERM's default action
    (the parent's handler raises in the parent's code, which a worker does not run).  Ctrl-C
    stays the parent's to handle."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for item in close:
        with contextlib.suppress(OSError):
            item.close() if hasattr(item, "close") else os.close(item)


def fork(call: Callable[[], Any], error: type[Exception], close: Iterable[Any] = ()):
    """Fork a process that runs ``call()``, sends the outcome (``(True, call())``, or ``(False,
    the exception)`` for the parent to raise; ``error`` naming an exception that does not pickle)
    and exits; returns the read end of its pipe and the process.  Forked from the calling
    (single-threaded) thread, so no lock can be held by a thread the child does not have.
    ``close``: the read ends of other workers' pipes, which the child must not hold."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    args = (call, send, os.getpid(), [receive, *close], error)
    process = context.Process(target=_forked_main, args=args, daemon=True)
    process.start()
    send.close()
    return receive, process


def _forked_main(call, conn, parent_pid: int, close: list, error: type[Exception]) -> None:
    """The forked process: one piece of work, then exit, its memory going back to the system
    with no garbage collection: a handout part leaves thousands of objects in reference cycles per
    page, so the collector stays off for good (turned back on, its next allocation would walk them
    just before the exit)."""
    forked_child(parent_pid, close)
    gc.disable()
    try:
        message: tuple[bool, Any] = (True, call())
    except BaseException as err:  # noqa: BLE001 - sent to the parent, which raises it
        message = (False, err)
    try:
        conn.send(message)
    except Exception as err:  # noqa: BLE001 - an exception that does not pickle
        conn.send((False, error(f"{type(message[1]).__name__}: {message[1]} ({err})")))
    conn.close()


def can_fork() -> bool:
    """A worker may be forked: the platform has fork and this process runs one thread (a fork
    copies no other thread, so a lock one of them held would stay held in the child)."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


class Beside:
    """``fn(*args, **kwargs)`` (``what`` it makes, for a message) made in a forked process at
    once, while the caller goes on with other work, where ``side_by_side`` and :func:`can_fork`;
    else called by :meth:`result`, which (once) gives the value or raises what ``fn`` raised.
    :meth:`cancel` kills the process if it still runs.  The process dies with its parent
    (:func:`forked_child`) and never collects garbage (short-lived).  Forked before the handout
    forks its own workers, so it holds no pipe of theirs.  ``fn`` should import what it needs
    itself (as ``api._workbook`` does): that import then runs beside the caller's work."""

    def __init__(
        self, what: str, fn: Callable[..., Any], *args: Any, side_by_side: bool, **kwargs: Any
    ):
        self.what = what
        self._call = functools.partial(fn, *args, **kwargs)
        self._process: Any = None
        if side_by_side and can_fork():
            self._receive, self._process = fork(self._call, RuntimeError)

    def result(self) -> Any:
        if self._process is None:
            return self._call()
        try:
            died = stopped_error(f"writing the {self.what}")
            return receive_outcome(self._receive, self._process, died)
        finally:
            self.cancel()

    def cancel(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        self._receive.close()
        if process.is_alive():
            process.kill()
        process.join()
        self._call = _cancelled


def _cancelled() -> Any:
    raise RuntimeError("cancelled")


def run_forked(
    tasks: Sequence[Callable[[], Any]],
    workers: int,
    done: Callable[[int, Any], None],
    error: type[Exception],
    stopped: Callable[[Any], Exception],
) -> None:
    """Run each task in a process of its own (:func:`fork`, ``error`` for an outcome that does
    not pickle), at most ``workers`` at a time, calling ``done(j, result)`` as each finishes;
    ``stopped(exit code)`` is raised where one dies without sending.  What the workers inherit is
    moved out of the collector's reach meanwhile (``gc.freeze``: a collection that walked it would
    touch, and so copy, every page of the heap they share; they never collect, so nothing is
    collected first)."""
    running: dict[Any, tuple[int, Any]] = {}
    started = 0
    gc.freeze()
    try:
        while started < len(tasks) or running:
            while started < len(tasks) and len(running) < workers:
                receive, process = fork(tasks[started], error, running)
                running[receive] = (started, process)
                started += 1
            for conn in multiprocessing.connection.wait(list(running)):
                j, process = running.pop(conn)
                done(j, receive_outcome(conn, process, stopped))
    finally:
        gc.unfreeze()
        for conn, (_, process) in running.items():
            process.kill()
            process.join()
            conn.close()
