"""Every atomic write of the project: a folder (:func:`publish`) or a file
(:func:`written_file`) is written in a scratch place beside its final one,
``[.]<name>.partial-<host>-<pid>-<random>``, and renamed into place once
complete, so a half-written folder or file is never visible under its final
name. Of two processes publishing one folder at once, the one that renames
second discards its copy and takes the winner's."""
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

PARTIAL = ".partial-"
"""Marks a folder being written."""
STALE = ".stale-"
"""Marks a folder moved aside to be removed."""


def publish(final: Path, write: Callable[[Path], object], hidden: bool = True,
            complete: Callable[[Path], bool] = Path.is_dir) -> bool:
    """Runs ``write(scratch)`` in a fresh scratch folder beside ``final`` and
    renames it to ``final``. Returns ``True`` when this copy took the place,
    ``False`` when another process's copy, ``complete(final)``, took it first
    (this copy is then discarded). If ``write`` raises, nothing is left.

    Args:
        final (Path): Where the folder goes; its parent must exist.
        write (Callable): Fills the folder it is given.
        hidden (bool): Whether the scratch folder's name starts with a dot.
            (default: ``True``)
        complete (Callable): Whether a folder found at ``final`` after a
            failed rename is another process's complete copy.
            (default: :meth:`Path.is_dir`)
    """
    scratch = scratch_path(final, PARTIAL, hidden)
    try:
        scratch.mkdir()
        write(scratch)
        try:
            os.replace(scratch, final)
        except OSError:  # another process renamed its copy into place first
            if not complete(final):
                raise
            return False
        return True
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def written_file(final: Path) -> Iterator[Path]:
    """A scratch file beside ``final``, with ``final``'s suffix (writers
    choose their format by it), that becomes ``final`` only when the block
    ends without an error; otherwise it is removed."""
    scratch = final.with_name(f".{final.stem}{PARTIAL}{owner_id()}{final.suffix}")
    try:
        yield scratch
        os.replace(scratch, final)
    finally:
        scratch.unlink(missing_ok=True)


def scratch_path(final: Path, marker: str = PARTIAL, hidden: bool = True) -> Path:
    """A path beside ``final`` that this process alone uses, named with
    ``marker`` (:data:`PARTIAL` or :data:`STALE`), the host and the pid."""
    dot = "." if hidden else ""
    return final.with_name(f"{dot}{final.name}{marker}{owner_id()}")


def remove_stale_scratch(final: Path, hidden: bool = True) -> None:
    """Removes the scratch and discarded folders of ``final`` left by dead
    processes of this host; those of live processes are kept."""
    dot = "." if hidden else ""
    for marker in (PARTIAL, STALE):
        prefix = f"{dot}{final.name}{marker}{socket.gethostname()}-"
        for scratch in final.parent.glob(f"{dot}{final.name}{marker}*"):
            pid = scratch.name[len(prefix):].split("-")[0]
            if scratch.name.startswith(prefix) and pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(scratch, ignore_errors=True)


def owner_id() -> str:
    """This process's name for what it alone writes: host, pid and a random part."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        pass
    return True
