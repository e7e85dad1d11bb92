"""The workbook written in a forked process while the caller renders something else (the handout).

``start(ledgers, lang, side_by_side)`` returns a function that gives the workbook's bytes: with
``side_by_side`` and where forking is safe (a platform with fork, one thread) a forked process
writes the workbook at once and the function waits for it; otherwise the function writes it
when called.  The process is forked before the handout forks its own workers, so it holds no
pipe of theirs; it ignores Ctrl-C (the parent's to handle) and is killed if the caller stops
waiting for it."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading
from typing import Any, Callable, Sequence


def _child(
    ledgers: list[Any], lang: str, options: dict, conn: Any, parent: tuple[int, list]
) -> None:
    import gc

    from ..workers import forked_child
    from . import render_xlsx

    forked_child(*parent)  # dies with the parent; no read end of its own pipe held open
    gc.disable()  # a short-lived process: its memory goes back to the system when it exits
    try:
        message: tuple[bool, Any] = (True, render_xlsx(ledgers, lang, **options))
    except BaseException as err:  # noqa: BLE001 - sent to the parent, which raises it
        message = (False, err)
    try:
        conn.send(message)
    except Exception as err:  # noqa: BLE001 - an exception that does not pickle
        conn.send((False, RuntimeError(f"{type(message[1]).__name__}: {message[1]} ({err})")))
    conn.close()


def start(
    ledgers: Sequence[Any], lang: str, side_by_side: bool, **options: Any
) -> Callable[[], bytes]:
    """A function giving the workbook's bytes (``render_xlsx(ledgers, lang, **options)``),
    written side by side where asked and safe."""
    from . import render_xlsx

    ledgers = list(ledgers)
    forkable = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    if not side_by_side or not forkable:
        return lambda: render_xlsx(ledgers, lang, **options)
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(
        target=_child, args=(ledgers, lang, options, send, (os.getpid(), [receive])), daemon=True
    )
    process.start()
    send.close()

    def wait() -> bytes:
        try:
            try:
                ok, payload = receive.recv()
            except EOFError:
                process.join()
                raise RuntimeError(
                    f"the process writing the workbook stopped (exit code {process.exitcode})"
                ) from None
        finally:
            receive.close()
            if process.is_alive():
                process.kill()
            process.join()
        if not ok:
            raise payload
        return payload

    return wait
