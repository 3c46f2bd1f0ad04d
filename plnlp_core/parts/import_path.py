"""A part named by import path, ``module.path:ClassName`` (a colon, as Python's
entry points spell it; a built-in name has none): telling one from a built-in
name and checking its spelling without torch, importing it, naming a class
object by its path, and what a run records of it: the code to carry with a
logged model and the version of the package that holds it.

A module is looked for where Python looks, and in the folder the command runs
from (as ``python -m`` does): the folder a ``ray job submit --working-dir``
job runs in, and whose path a local Ray gives its workers."""
import hashlib
import importlib
import importlib.metadata
import os
import re
import sys
from pathlib import Path

from plnlp_core.choices import PART_KINDS
from plnlp_core.errors import PLNLPError, first_line

SEPARATOR = ":"
_IDENTIFIERS = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_IMPORT_PATH = re.compile(rf"^(?P<module>{_IDENTIFIERS}):(?P<name>{_IDENTIFIERS})$")
GUIDE = "docs/extending.md"


def is_import_path(name: object) -> bool:
    """Whether ``name`` names a part by import path rather than a built-in name."""
    return isinstance(name, str) and SEPARATOR in name


def own_parts(config: object) -> dict[str, str]:
    """Each part of one's own a config names: its kind (``encoder``, ...) to
    its import path."""
    return {kind: getattr(config, kind) for kind in PART_KINDS
            if is_import_path(getattr(config, kind))}


def with_article(kind: str) -> str:
    """``kind`` with its article: ``an encoder``, ``a loss``."""
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def check_spelling(kind: str, path: str) -> None:
    """Refuses an import path that is not ``module.path:ClassName``."""
    if not _IMPORT_PATH.match(path):
        raise PLNLPError(f"{kind} {path!r} is not an import path; write module.path:ClassName "
                         f"(e.g. my_parts.layers:GINLayer), a module and a name in it "
                         f"separated by one colon ({GUIDE}).")


def import_object(kind: str, path: str) -> object:
    """The object ``path`` names, its module imported: refused in one
    sentence when the module does not import or has no such name."""
    check_spelling(kind, path)
    module_name, _, name = path.partition(SEPARATOR)
    search_current_folder()
    try:
        found = importlib.import_module(module_name)
    except Exception as error:  # the user's module may fail in any way
        raise PLNLPError(f"{kind} {path!r} cannot be imported ({type(error).__name__}: "
                         f"{first_line(error)}); install the package that holds it, or run "
                         f"from the folder that holds {module_name.split('.')[0]} "
                         f"({GUIDE}).") from error
    for attribute in name.split("."):
        if not hasattr(found, attribute):
            public = sorted(key for key, value in vars(found).items()
                            if isinstance(value, type) and not key.startswith("_")
                            and value.__module__ == found.__name__)
            raise PLNLPError(f"{kind} {path!r} names nothing in {found.__name__} (its classes: "
                             f"{', '.join(public) or 'none'}); give one of them after the "
                             "colon.")
        found = getattr(found, attribute)
    return found


def search_current_folder() -> None:
    """Puts the current folder on the module search path, last, unless
    Python searches it already (``""``, as ``python -c`` and ``python -m``
    do): ``python pipelines/run.py`` searches the script's folder instead."""
    folder = os.getcwd()
    if "" not in sys.path and folder not in sys.path:
        sys.path.append(folder)


def import_path_of(kind: str, part: type) -> str:
    """``module.path:ClassName`` of the class ``part``, refused when no other
    process could import it by that path (a class of ``__main__``, of a
    notebook, or one defined inside a function)."""
    module, name = part.__module__, part.__qualname__
    if module == "__main__" or "<locals>" in name:
        where = "a function" if "<locals>" in name else "__main__ (a notebook or script)"
        raise PLNLPError(f"{kind} {name} is defined in {where}, which Ray's workers and a "
                         f"served model cannot import; move it into a module of your package "
                         f"and give that ({GUIDE}).")
    return f"{module}{SEPARATOR}{name}"


def code_location(path: str) -> Path:
    """What holds the part ``path`` names: the folder of its top-level
    package, or the file of a top-level module (what a logged model carries
    so that it loads where the package is not installed)."""
    module_name = path.partition(SEPARATOR)[0]
    file = module_file(module_name)
    location = file.parent if file.name == "__init__.py" else file
    for _ in range(module_name.count(".")):
        location = location.parent
    return location


def code_version(path: str) -> str:
    """Which code the part ``path`` names is: ``<distribution> <version>``
    when an installed distribution holds its module, else ``sha256:`` and
    the first 16 hex digits of the hash of the files of
    :func:`code_location` (a loose module or package)."""
    module_name = path.partition(SEPARATOR)[0]
    file = module_file(module_name)
    top = module_name.split(".")[0]
    for name in importlib.metadata.packages_distributions().get(top, []):
        distribution = importlib.metadata.distribution(name)
        if any(Path(distribution.locate_file(each)).resolve() == file
               for each in distribution.files or ()):
            return f"{distribution.metadata['Name']} {distribution.version}"
    return f"sha256:{files_digest(code_location(path))[:16]}"


def module_file(module_name: str) -> Path:
    """The file the module ``module_name`` was imported from."""
    search_current_folder()
    return Path(importlib.import_module(module_name).__file__).resolve()


def files_digest(location: Path) -> str:
    """The SHA-256 of a file, or of a folder's files (their paths and bytes,
    in order; bytecode caches left out)."""
    files = [location] if location.is_file() else sorted(
        each for each in location.rglob("*")
        if each.is_file() and "__pycache__" not in each.parts and each.suffix != ".pyc")
    digest = hashlib.sha256()
    for each in files:
        digest.update(str(each.relative_to(location.parent)).encode())
        digest.update(each.read_bytes())
    return digest.hexdigest()
