"""The one place that writes files: all-or-nothing, atomic per file, never over an input.

Renderers return bytes; the CLI hands every output of a run to :func:`write_outputs`, which

1. refuses (``OutputError``) before writing anything when a target is an input file (same path,
   ``./`` spelling, symlink or hard link) or an existing directory, or two targets are one file;
2. writes each output to a temp file in the target's own folder (``.<name>.XXXX.tmp``: same
   filesystem, so ``os.replace`` is atomic), flushes and fsyncs it, and gives it the mode a plain
   write would (an existing file keeps its mode, a new one gets ``0o666 & ~umask``, not
   ``mkstemp``'s 0600);
3. only when every temp is complete, replaces the targets; if a replace fails part-way, the files
   already replaced are put back from a hard-link backup, so a failed run never leaves a mixed set;
4. on any failure removes every temp and backup, leaving earlier files byte-identical, and turns
   ``OSError`` into ``OutputError`` naming the path and the reason in one sentence.

Sources: reliability.md §4 (OUT-01..09: ``wb.save`` destroying the previous report, click's
atomic writer keeping half-written files, ``mkstemp`` 0600 modes); Python docs for ``os.replace``
(atomic on POSIX within one filesystem).

Reproducible workbook bytes (reliability.md §4.4, DET-01) are the workbook writer's own business
(``render/workbook.py``: XlsxWriter's fixed zip timestamps and a fixed creation time); nothing
here re-packs a zip.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from ledger_report.errors import OutputError

__all__ = ["write_outputs"]


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
    files: Mapping[os.PathLike | str, bytes], *, inputs: Iterable[os.PathLike | str] = ()
) -> list[Path]:
    """Write every ``{path: bytes}`` atomically, all or nothing; returns the paths written.

    Raises ``OutputError`` (and leaves every existing file as it was, with no temp files) when a
    target is an input, when a folder cannot be created, or when any write or replace fails.
    """
    items = [(Path(p), bytes(data)) for p, data in files.items()]
    given = [p for p, _ in items]
    # Write through a symlinked target to the file it points at, as a plain write would.
    targets = [p.resolve() if p.is_symlink() else p for p in given]
    _check_targets(targets, inputs)
    umask = _current_umask()

    temps: list[str] = []
    made_dirs: list[Path] = []
    backups: dict[Path, str | None] = {}
    replaced: list[Path] = []
    action, current = "write", given[0] if given else Path(".")
    try:
        # Phase 1: every output into its own complete, synced temp file.
        for shown, target, (_, data) in zip(given, targets, items):
            current = shown
            action = "create the folder for"
            made_dirs.extend(_make_parents(target.parent))
            action = "write"
            temps.append(_write_temp(target, data, _final_mode(target, umask)))
        # Phase 2: keep a way back for each existing target, then swap every temp in.
        for shown, target in zip(given, targets):
            current, action = shown, "keep a backup of"
            backups[target] = _backup(target)
        for shown, target, tmp in zip(given, targets, temps):
            current, action = shown, "replace"
            os.replace(tmp, target)
            replaced.append(target)
    except BaseException as exc:
        _rollback(replaced, backups)
        _remove(temps)
        _remove(b for b in backups.values() if b)
        _remove_dirs(made_dirs)
        if isinstance(exc, OSError):
            raise _error(action, current, exc) from exc
        raise
    _remove(b for b in backups.values() if b)
    for folder in dict.fromkeys(t.parent for t in targets):
        _fsync_dir(folder)
    return given


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
