"""The one place that writes files: all-or-nothing, atomic per file, never over an input.

Renderers return bytes; the CLI hands every output of a run to :func:`write_outputs`, which

1. refuses (``OutputError``) before writing anything when a target is an input file (same path,
   ``./`` spelling, symlink or hard link) or an existing directory, or two targets are one file
   (every caller names the files it read: ``inputs`` has no default);
2. writes each output to a temp file in the target's own folder (``.<name>.XXXX.tmp``: same
   filesystem, so ``os.replace`` is atomic), flushes and fsyncs it, and gives it the mode a plain
   write would (an existing file keeps its mode, a new one gets ``0o666 & ~umask``, not
   ``mkstemp``'s 0600);
3. only when every temp is complete, backs up every existing target (a hard link) and replaces
   the targets, each recorded as moved before its replace; Ctrl-C, SIGTERM and SIGHUP are held
   meanwhile; if a replace fails part-way or a signal came, every target recorded is put back from
   its backup (or removed, where it is new) before the signal takes effect, so an interrupted or
   failed run never leaves a mixed set;
4. on any failure removes every temp and backup, leaving earlier files byte-identical, and turns
   ``OSError`` into ``OutputError`` naming the path and the reason in one sentence.

Sources: reliability.md §4 (OUT-01..09: ``wb.save`` destroying the previous report, click's
atomic writer keeping half-written files, ``mkstemp`` 0600 modes); Python docs for ``os.replace``
(atomic on POSIX within one filesystem).

Every CSV the tool writes comes from :func:`csv_bytes` (OWASP's neutralising of leading formula
characters, RFC 4180 quoting).

Reproducible workbook bytes (reliability.md §4.4, DET-01) are the workbook writer's own business
(``render/workbook.py``: XlsxWriter's fixed zip timestamps and a fixed creation time); nothing
here re-packs a zip.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ledger_report.errors import OutputError

__all__ = [
    "FORMULA_STARTS",
    "check_targets",
    "csv_bytes",
    "csv_lines",
    "csv_text",
    "write_outputs",
]


# --------------------------------------------------------------------------------------------
# Messages


def _reason(exc: OSError) -> str:
    text = exc.strerror or str(exc) or type(exc).__name__
    return text[0].lower() + text[1:] if text else text


def _error(action: str, path: Path, exc: OSError) -> OutputError:
    if getattr(exc, "winerror", None) in (5, 32):  # access denied / sharing violation on Windows
        return OutputError(
            f"Cannot {action} {path}: it is open in another program; close it or choose another output folder."
        )
    return OutputError(f"Cannot {action} {path}: {_reason(exc)}.")


# --------------------------------------------------------------------------------------------
# Checks made before anything is written


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)  # hard links, case-insensitive filesystems, bind mounts
    except OSError:
        return False  # one of them does not exist yet


def check_targets(
    targets: Iterable[os.PathLike | str], inputs: Iterable[os.PathLike | str]
) -> None:
    """The refusals :func:`write_outputs` makes before writing, made before any work (a caller
    that knows its targets early need not render a handout to learn that one is its input)."""
    paths = [Path(p) for p in targets]
    _check_targets([p.resolve() if p.is_symlink() else p for p in paths], list(inputs))


def _check_targets(targets: list[Path], inputs: Iterable[os.PathLike | str]) -> None:
    input_paths = [Path(p) for p in inputs]
    for target in targets:
        for source in input_paths:
            if _same_file(target, source):
                raise OutputError(
                    f"Refusing to write {target}: it is the input file {source}; choose another output folder."
                )
        if target.is_dir():
            raise OutputError(f"Cannot write {target}: a folder of that name exists.")
    for i, first in enumerate(targets):
        for second in targets[i + 1 :]:
            if _same_file(first, second):
                raise OutputError(f"Cannot write {first} and {second}: they are the same file.")


def _current_umask() -> int:
    try:  # Linux: read it without changing it (thread-safe)
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _final_mode(target: Path, umask: int) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)  # an existing file keeps its mode
    except OSError:
        return 0o666 & ~umask  # what open(target, "wb") would create


# --------------------------------------------------------------------------------------------
# The writer


def _remove(paths: Iterable[str]) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


def _fsync_dir(folder: Path) -> None:
    if sys.platform == "win32":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the data itself is already synced
    finally:
        os.close(fd)


def _write_temp(target: Path, data: bytes, mode: int) -> str:
    """Write ``data`` to a fresh temp file beside ``target``; returns its path."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        _remove([tmp])
        raise
    return tmp


def _backup(target: Path) -> str | None:
    """A hard link (or, where links are not allowed, a copy) of an existing target, for rollback."""
    if not target.exists():
        return None
    fd, bak = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".bak.tmp")
    os.close(fd)
    os.unlink(bak)
    try:
        os.link(target, bak)
    except OSError:
        shutil.copy2(target, bak)
    return bak


def write_outputs(
    files: Mapping[os.PathLike | str, bytes], *, inputs: Iterable[os.PathLike | str]
) -> list[Path]:
    """Write every ``{path: bytes}`` atomically, all or nothing; returns the paths written.

    ``inputs``: every file the run read (required, so that no caller forgets them: an output is
    never written over one).  Raises ``OutputError`` (and leaves every existing file as it was,
    with no temp files) when a target is an input, when a folder cannot be created, or when any
    write or replace fails; an interrupting signal (Ctrl-C, SIGTERM) while the files are swapped
    in puts every earlier file back before it takes effect.
    """
    items = [(Path(p), bytes(data)) for p, data in files.items()]
    given = [p for p, _ in items]
    # Write through a symlinked target to the file it points at, as a plain write would.
    targets = [p.resolve() if p.is_symlink() else p for p in given]
    _check_targets(targets, list(inputs))
    umask = _current_umask()

    temps: list[str] = []
    made_dirs: list[Path] = []
    action, current = "write", given[0] if given else Path(".")
    try:
        # Phase 1: every output into its own complete, synced temp file.
        for shown, target, (_, data) in zip(given, targets, items):
            current = shown
            action = "create the folder for"
            made_dirs.extend(_make_parents(target.parent))
            action = "write"
            temps.append(_write_temp(target, data, _final_mode(target, umask)))
        # Phase 2: every temp swapped in, or every target as it was.
        _swap_in(given, targets, temps)
    except BaseException as exc:
        _remove(temps)
        _remove_dirs(made_dirs)
        if isinstance(exc, _SwapError):
            raise _error(exc.action, exc.path, exc.error) from exc.error
        if isinstance(exc, OSError):
            raise _error(action, current, exc) from exc
        raise
    for folder in dict.fromkeys(t.parent for t in targets):
        _fsync_dir(folder)
    return given


class _SwapError(Exception):
    """An ``OSError`` while swapping the outputs in, with the file and the step it stopped at."""

    def __init__(self, action: str, path: Path, error: OSError) -> None:
        super().__init__(action, path, error)
        self.action, self.path, self.error = action, path, error


# The signals that end a run early and that are held while the outputs are swapped in.
_HELD_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def _signals_held() -> Iterator[Callable[[], bool]]:
    """Ctrl-C, SIGTERM and SIGHUP held back (not lost) while the block runs and raised again when
    it ends, under the handlers they had; yields a function telling whether one came meanwhile.

    The handlers are swapped for a recorder (Python runs signal handlers in the main thread only,
    whichever thread the kernel picked): ``pthread_sigmask`` would not do, since a process-wide
    signal goes to any thread that does not block it (numpy's BLAS threads, for one).  A signal
    whose handler was not set from Python, or is ignored, is left alone; off the main thread
    nothing is held and nothing is reported."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    came: list[int] = []
    before: dict[int, Any] = {}
    try:
        for signum in _HELD_SIGNALS:
            handler = signal.getsignal(signum)
            if handler is not None and handler is not signal.SIG_IGN:
                before[signum] = signal.signal(signum, lambda n, _frame: came.append(n))
        yield lambda: bool(came)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(came):
            signal.raise_signal(signum)  # under its own handler again: Ctrl-C raises here


def _swap_in(given: list[Path], targets: list[Path], temps: list[str]) -> None:
    """Replace every target by its temp, signals held: first a backup (hard link) of each
    existing target, then each replace, its target recorded as moved *before* the replace is
    made (a target recorded but not yet replaced is put back to what it already is).  On any
    error, or if a signal came meanwhile, every moved target is put back from its backup (or
    removed, where it did not exist) before the signal is let through."""
    backups: dict[Path, str | None] = {}
    moved: list[Path] = []
    interrupted = False
    with _signals_held() as signalled:
        try:
            for shown, target in zip(given, targets):
                try:
                    backups[target] = _backup(target)
                except OSError as err:
                    raise _SwapError("keep a backup of", shown, err) from err
            for shown, target, tmp in zip(given, targets, temps):
                moved.append(target)  # intent first: a rollback covers it whatever happens next
                try:
                    os.replace(tmp, target)
                except OSError as err:
                    raise _SwapError("replace", shown, err) from err
            interrupted = signalled()
            if interrupted:
                _rollback(moved, backups)
        except BaseException:
            _rollback(moved, backups)
            raise
        finally:
            _remove(b for b in backups.values() if b)
    if interrupted:  # the held signal's handler did not raise (a handler of the caller's own)
        raise KeyboardInterrupt


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; returns the folders created, deepest first."""
    missing: list[Path] = []
    probe = folder
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def _remove_dirs(folders: list[Path]) -> None:
    """Remove folders this run created, if still empty (deepest first)."""
    for folder in sorted(set(folders), key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass


def _rollback(replaced: list[Path], backups: Mapping[Path, str | None]) -> None:
    """Put back the earlier content of every target already replaced (best effort)."""
    for target in reversed(replaced):
        backup = backups.get(target)
        try:
            if backup:
                os.replace(backup, target)
            else:
                os.unlink(target)  # it did not exist before this run
        except OSError:
            pass


# --------------------------------------------------------------------------------------------
# CSV: the one writer of every CSV file the tool makes

# A cell whose text starts with one of these is read as a formula by spreadsheet programs (OWASP,
# "CSV Injection": = + - @ tab and carriage return; line feed as well, which some programs treat
# as the start of a new cell's formula).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_text(value: Any) -> Any:
    """A CSV cell's value made safe to open in a spreadsheet: text starting with a formula
    character gets a leading apostrophe, as OWASP advises ("CSV Injection": prepend ``'`` to
    fields starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return; the csv module then
    quotes and doubles ``"`` as RFC 4180 §2.6-2.7 asks); booleans as ``true``/``false``; numbers
    as they are (a negative number is a number, not text)."""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_bytes(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> bytes:
    """A CSV file (UTF-8) of ``rows`` under the header ``columns``; a column a row lacks is an
    empty cell (see :func:`csv_lines`)."""
    return csv_lines([list(columns), *([row.get(c, "") for c in columns] for row in rows)])


def csv_lines(rows: Iterable[Sequence[Any]]) -> bytes:
    """CSV lines (UTF-8) of ``rows``, every cell through :func:`csv_text`: the one CSV writer of
    the package (plans.csv, the CSV template, ``calc --csv``).  Lines end in CRLF, as RFC 4180
    §2.1 has them: the csv module quotes a field holding a character of the line terminator, so a
    carriage return inside a note is quoted too (with ``\\n`` alone, a bare CR went unquoted)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerows([csv_text(c) for c in row] for row in rows)
    return buf.getvalue().encode("utf-8")
