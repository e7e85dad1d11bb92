"""The one place that writes files: all-or-nothing, atomic per file, never over an input.

Renderers return bytes; the CLI hands every output of a run to :func:`write_outputs`, which

1. refuses (``OutputError``) before writing anything when a target is an input file (same path,
   ``./`` spelling, symlink or hard link) or an existing directory, or two targets are one file
   (every caller names the files it read: ``inputs`` has no default);
2. writes each output to a temp file in the target's own folder (``.<name>.<run id>.tmp``: same
   filesystem, so ``os.replace`` is atomic), flushes and fsyncs it, and gives it the mode a plain
   write would (an existing file keeps its mode, a new one gets ``0o666 & ~umask``, not the
   0600 it is created with);
3. only when every temp is complete, backs up every existing target (a hard link) and replaces
   the targets; Ctrl-C, SIGTERM and SIGHUP are held meanwhile; if a replace fails part-way or a
   signal came, every target is put back from its backup (or removed, where it is new and its
   temp is gone) before the signal takes effect, so an interrupted or failed run never leaves a
   mixed set;
4. on any failure removes every temp and backup, leaving earlier files byte-identical, and turns
   ``OSError`` into ``OutputError`` naming the path and the reason in one sentence;
5. keeps a journal of the swap, so that a run killed outright is rolled back by the next run
   that writes into the same folder (:func:`recover`; "The journal" below).

Why: a save that fails over the previous report must not destroy it, and ``mkstemp`` makes 0600
files; ``os.replace`` is atomic on POSIX within one filesystem (Python docs).

Every CSV the tool writes comes from :func:`csv_lines` (OWASP's neutralising of leading formula
characters, RFC 4180 quoting).
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import os
import secrets
import shutil
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ledger_report.config import COLUMN_NAMES
from ledger_report.errors import OutputError

try:  # POSIX: the lock that tells a live run's journal from a dead one's
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FORMULA_STARTS",
    "check_targets",
    "csv_bytes",
    "csv_lines",
    "csv_text",
    "recover",
    "write_outputs",
]


# --------------------------------------------------------------------------------------------
# Messages


@contextlib.contextmanager
def _failing(action: str, path: Path) -> Iterator[None]:
    """An ``OSError`` in the block as an ``OutputError``: which ``action`` on ``path``, and why."""
    try:
        yield
    except OSError as exc:
        if getattr(exc, "winerror", None) in (5, 32):  # access denied / sharing violation (Windows)
            raise OutputError(
                f"Cannot {action} {path}: it is open in another program; close it or choose another output folder."
            ) from exc
        reason = exc.strerror or str(exc) or type(exc).__name__  # never empty
        raise OutputError(f"Cannot {action} {path}: {reason[0].lower() + reason[1:]}.") from exc


# --------------------------------------------------------------------------------------------
# Checks made before anything is written


def _same_file(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError):  # samefile: hard links, case-insensitive names, bind mounts
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    return False  # one of them does not exist yet


def check_targets(
    paths: Iterable[os.PathLike | str], inputs: Iterable[os.PathLike | str]
) -> list[Path]:
    """The refusals :func:`write_outputs` makes before writing, made before any work (a caller
    that knows its targets early need not render a handout to learn that one is its input);
    a killed earlier run undone; returns the targets, a symlink as the file it points at (written
    through, as a plain write would)."""
    targets = [p.resolve() if p.is_symlink() else p for p in map(Path, paths)]
    input_paths = [Path(p) for p in inputs]
    for target in targets:
        for source in input_paths:
            if _same_file(target, source):
                raise OutputError(
                    f"Refusing to write {target}: it is the input file {source}; choose another output folder."
                )
        if target.is_dir():
            raise OutputError(f"Cannot write {target}: a folder of that name exists.")
    for first, second in itertools.combinations(targets, 2):
        if _same_file(first, second):
            raise OutputError(f"Cannot write {first} and {second}: they are the same file.")
    recover(t.parent for t in targets)
    return targets


def _current_umask() -> int:
    with contextlib.suppress(OSError, ValueError, IndexError):  # Linux: read, not set (thread-safe)
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
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


def _remove(paths: Iterable[str | Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # Windows and some filesystems cannot fsync a directory
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_temp(target: Path, run: str, data: bytes, mode: int) -> str:
    """Write ``data`` to a fresh temp file beside ``target``, named with the run's id (so that a
    later run can find it if this one is killed); returns its path."""
    tmp = str(target.parent / f".{target.name}.{run}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
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


def _backup(target: Path, run: str) -> str | None:
    """A hard link (or, where links are not allowed, a copy) of an existing target, for rollback."""
    if not target.exists():
        return None
    bak = str(target.parent / f".{target.name}.{run}.bak.tmp")
    try:
        os.link(target, bak)
    except OSError:
        shutil.copy2(target, bak)
    return bak


def write_outputs(
    files: Mapping[os.PathLike | str, bytes], *, inputs: Iterable[os.PathLike | str]
) -> list[Path]:
    """Write every ``{path: bytes}`` all or nothing, in the steps the module's docstring lists;
    returns the paths written.  ``inputs``: every file the run read (required, so that no caller
    forgets them: an output is never written over one)."""
    items = [(Path(p), bytes(data)) for p, data in files.items()]
    given = [p for p, _ in items]
    targets = check_targets(given, inputs)
    umask = _current_umask()

    temps: list[str] = []
    made_dirs: list[Path] = []
    journal: _Journal | None = None
    try:
        # Phase 1: every output into its own complete, synced temp file.
        for shown, target, (_, data) in zip(given, targets, items):
            with _failing("create the folder for", shown):
                folder = target.parent
                made_dirs += [p for p in (folder, *folder.parents) if not p.exists()]
                folder.mkdir(parents=True, exist_ok=True)
            with _failing("write", shown):
                journal = journal or _Journal(target.parent, [t.parent for t in targets])
                temps.append(_write_temp(target, journal.run, data, _final_mode(target, umask)))
        # Phase 2: every temp swapped in, or every target as it was.
        if journal is not None:
            _swap_in(given, targets, temps, journal)
    except BaseException:
        _remove(temps)
        if journal is not None:
            journal.end()
        _remove_dirs(made_dirs)
        raise
    if journal is not None:
        journal.end()
    for folder in dict.fromkeys(t.parent for t in targets):
        _fsync_dir(folder)
    return given


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


# One swap's entries: (target, its temp, its backup or None where the target did not exist).
_Entry = tuple[Path, str, "str | None"]


def _swap_in(given: list[Path], targets: list[Path], temps: list[str], journal: _Journal) -> None:
    """Step 3 of the module's docstring, in this order: a backup (hard link) of each existing
    target, the journal's record of the swap (synced), each replace, the record that it is done;
    a kill (which nothing holds) leaves the journal for the next run to undo (:func:`recover`)."""
    entries: list[_Entry] = []
    interrupted = False
    with _signals_held() as signalled:
        try:
            for shown, target, tmp in zip(given, targets, temps):
                with _failing("keep a backup of", shown):
                    entries.append((target, tmp, _backup(target, journal.run)))
            with _failing("record the swap beside", given[0]):
                journal.record({"swap": [[str(t), tmp, bak] for t, tmp, bak in entries]})
            for shown, target, tmp in zip(given, targets, temps):
                with _failing("replace", shown):
                    os.replace(tmp, target)
            interrupted = signalled()
            if interrupted:
                _undo(entries)
            else:
                with _failing("record the swap beside", given[0]):
                    journal.record({"done": True}, sync=False)
        except BaseException:
            _undo(entries)
            raise
        finally:
            _remove(bak for _t, _tmp, bak in entries if bak)
    if interrupted:  # the held signal's handler did not raise (a handler of the caller's own)
        raise KeyboardInterrupt


def _undo(entries: Sequence[_Entry]) -> None:
    """Every target of a swap as it was before it (best effort; safe to repeat): a target with a
    backup gets it back (the backup is consumed, so a second undo leaves it); a target that did not
    exist is removed if its temp is gone (``os.replace`` is atomic: the temp is gone exactly when
    it has become the target)."""
    for target, tmp, backup in reversed(entries):
        with contextlib.suppress(OSError):
            if backup:
                if os.path.lexists(backup):
                    os.replace(backup, target)
            elif not os.path.lexists(tmp) and os.path.lexists(target):
                os.unlink(target)


def _remove_dirs(folders: list[Path]) -> None:
    """Remove folders this run created, if still empty (deepest first)."""
    for folder in sorted(set(folders), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


# --------------------------------------------------------------------------------------------
# The journal: what a run killed outright (SIGKILL, a crash) left, undone by the next run
#
# Signals that can be handled are held while the outputs are swapped in; SIGKILL cannot be, and a
# kill there would leave a mixed set of old and new outputs and `.bak.tmp` backups.  Every file a
# run makes beside its outputs is named with the run's id; its journal,
# `.ledger-report.<id>.journal.tmp` in the first output's folder, says which folders those are
# and, once every backup exists, which target has which temp and backup (synced before the first
# replace), then that the swap is done.  The run holds an exclusive lock (flock(2)) on its journal
# for as long as it lives; the kernel drops the lock when the process dies, however it dies.  A
# later run that writes into the same folder takes the lock of every journal there without
# waiting: it gets one only from a dead run, rolls that run back (:func:`_undo`) unless its swap
# was done, removes its files and then the journal.

JOURNAL_PREFIX, JOURNAL_SUFFIX = ".ledger-report.", ".journal.tmp"
_JOURNAL_MAX_BYTES = 1 << 20  # a journal holds a few paths; anything longer is not one of ours
_YOUNG_S = 10.0  # an empty journal this young may be a live run's, between creating and locking it


class _Journal:
    """This run's journal (see above), locked from its creation until :meth:`end`."""

    def __init__(self, folder: Path, folders: Iterable[Path]) -> None:
        self.run = secrets.token_hex(6)
        self.path = folder / f"{JOURNAL_PREFIX}{self.run}{JOURNAL_SUFFIX}"
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(self.fd, fcntl.LOCK_EX)
            places = [str(f) for f in dict.fromkeys(Path(f).absolute() for f in folders)]
            self.record({"run": self.run, "folders": places}, sync=False)
        except BaseException:
            self.end()
            raise

    def record(self, entry: Mapping[str, Any], sync: bool = True) -> None:
        """Append one line (JSON); synced unless ``sync`` is false (the order of the swap's record
        and the first replace must survive a power cut; a lost last line is undone as if never
        written)."""
        os.write(self.fd, json.dumps(entry).encode("ascii") + b"\n")
        if sync:
            os.fsync(self.fd)

    def end(self) -> None:
        """Remove the journal, then let go of its lock."""
        _remove([self.path])
        os.close(self.fd)


def recover(folders: Iterable[os.PathLike | str]) -> list[Path]:
    """Roll back every run killed while writing into ``folders``, as above (a recovery that is
    itself killed is repeated by the next run); returns the journals recovered.  Without
    ``flock`` (Windows) nothing can tell a live run from a dead one, and nothing is done."""
    done: list[Path] = []
    if fcntl is None:
        return done
    for folder in dict.fromkeys(Path(f) for f in folders):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            ours = name.startswith(JOURNAL_PREFIX) and name.endswith(JOURNAL_SUFFIX)
            if ours and _recover_one(folder / name):
                done.append(folder / name)
    return done


def _recover_one(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # its run is alive
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_nlink == 0
            or info.st_size > _JOURNAL_MAX_BYTES
        ):
            return False  # not a journal, or one its run has just removed
        records = _records(os.read(fd, _JOURNAL_MAX_BYTES))
        head = records[0] if records and "run" in records[0] else None
        if head is None:
            if time.time() - info.st_mtime < _YOUNG_S:
                return False
        else:
            swap = next((r["swap"] for r in records if "swap" in r), None)
            if swap and not any(r.get("done") for r in records):
                _undo([(Path(t), tmp, bak) for t, tmp, bak in swap])
            _remove_run_files(head.get("folders", []), str(head["run"]))
        _remove([path])
        _fsync_dir(path.parent)
        return True
    finally:
        os.close(fd)


def _records(data: bytes) -> list[dict[str, Any]]:
    """A journal's complete lines (a line cut short by the kill is left out)."""
    out = []
    for line in data.split(b"\n")[:-1]:
        try:
            record = json.loads(line)
        except ValueError:
            break
        if not isinstance(record, dict):
            break
        out.append(record)
    return out


def _remove_run_files(folders: Iterable[str], run: str) -> None:
    """Every temp and backup of run ``run`` left in ``folders``."""
    if not run.isalnum():
        return
    ends = (f".{run}.tmp", f".{run}.bak.tmp")
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        _remove(os.path.join(folder, n) for n in names if n.startswith(".") and n.endswith(ends))


# --------------------------------------------------------------------------------------------
# CSV: the one writer of every CSV file the tool makes

# A cell whose text starts with one of these is read as a formula by spreadsheet programs (OWASP,
# "CSV Injection": = + - @ tab and carriage return; line feed as well, which some programs treat
# as the start of a new cell's formula).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_text(value: Any) -> Any:
    """A CSV cell's value made safe to open in a spreadsheet: text starting with one of
    :data:`FORMULA_STARTS` gets a leading apostrophe, as OWASP advises (the csv module then quotes
    and doubles ``"`` as RFC 4180 §2.6-2.7 asks); booleans as ``true``/``false``; numbers as they
    are (a negative number is a number, not text)."""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_bytes(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> bytes:
    """A CSV file (UTF-8) of ``rows`` under the header ``columns``; a column a row lacks is an
    empty cell (see :func:`csv_lines`)."""
    return csv_lines([list(columns), *([row.get(c, "") for c in columns] for row in rows)])


def plans_csv(doc: Mapping[str, Any]) -> bytes:
    """plans.csv: every plan's row under the input columns, one complete input row per plan."""
    return csv_bytes(COLUMN_NAMES, (p["row"] for p in doc["plans"]))


def template_csv() -> bytes:
    """The empty input file as CSV: the column names and the XLSX template's example row."""
    from .workbook import EXAMPLE_ROW

    return csv_bytes(COLUMN_NAMES, [EXAMPLE_ROW])


def csv_lines(rows: Iterable[Sequence[Any]], safe: bool = False) -> bytes:
    """CSV lines (UTF-8) of ``rows``, every cell through :func:`csv_text` (``safe``: the caller
    put each through it, as ``calc --csv`` does a column at a time): the one CSV writer of the
    package (plans.csv, the CSV template, ``calc --csv``).  Lines end in CRLF, as RFC 4180 §2.1
    has them: the csv module quotes a field holding a character of the line terminator, so a
    carriage return inside a note is quoted too."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerows(rows if safe else ([csv_text(c) for c in row] for row in rows))
    return buf.getvalue().encode("utf-8")
