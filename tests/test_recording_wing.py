"""MLflow is written and read from the recording wing alone: a module
outside ``components/recording/`` that logs, tags, opens, ends or registers
through ``mlflow`` or an ``MlflowClient`` fails this test, and so does one
that imports ``mlflow`` at all (at its top or inside a function), but the
tracking store's checks (``components/recording/tracking_store.py``). Reads go
through :mod:`components.recording.reads`, names through
:mod:`components.recording.tags`.

The wing is a leaf that only logs: a module inside it that imports a stage
(or the stage cache, or the Parquet files stages hand on) fails too; what
reads a stage's output lives with the stage and hands the wing what to log."""
import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("plnlp_core", "components", "pipelines")
RECORDING = ROOT / "components" / "recording"
WRITES = {"set_tag", "set_tags", "delete_tag", "start_run", "end_run", "create_run",
          "set_terminated", "update_run", "delete_run", "restore_run", "create_experiment",
          "set_experiment", "set_experiment_tag", "set_experiment_tags",
          "delete_experiment_tag", "delete_experiment", "register_model",
          "create_registered_model", "create_model_version", "set_registered_model_alias",
          "delete_registered_model_alias", "set_registered_model_tag",
          "set_model_version_tag", "transition_model_version_stage", "delete_registered_model"}


STAGE_MODULES = ("components.load", "components.augment", "components.train",
                 "components.evaluate", "components.heart", "components.train_and_evaluate",
                 "components.storage.stage_cache", "components.storage.manifest",
                 "components.storage.parquet_io")
"""What the recording wing may not import: the stages (the train stage with
its workers' parts), one config's chain of them, the stage cache and the
Parquet reader and writer."""


def is_write(name: str) -> bool:
    """Whether an MLflow call of this name writes to the tracking store."""
    return name in WRITES or name.startswith("log_")


def sources() -> list[Path]:
    """Every Python module of the packages but the recording wing's."""
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py")
                  if RECORDING not in path.parents)


def makes_client(node: ast.AST) -> bool:
    """Whether ``node`` builds an ``MlflowClient`` somewhere inside."""
    return any(isinstance(call, ast.Call) and _name(call.func) == "MlflowClient"
               for call in ast.walk(node))


def _name(node: ast.AST) -> str | None:
    """The last name of ``a.b.c`` or ``c``."""
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)


def _root(node: ast.AST) -> ast.AST:
    """``a`` of ``a.b.c``, or the call that starts ``f().b``."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def client_names(tree: ast.Module) -> set[str]:
    """Names bound to an ``MlflowClient``: assigned one, or annotated as one."""
    names = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
             and makes_client(node.value) for target in node.targets
             if isinstance(target, ast.Name)}
    return names | {node.arg for node in ast.walk(tree)
                     if isinstance(node, ast.arg) and arg_is_client(node)}


def arg_is_client(arg: ast.arg) -> bool:
    """Whether a parameter is annotated ``MlflowClient``."""
    return arg.annotation is not None and "MlflowClient" in ast.unparse(arg.annotation)


def writes(path: Path, root: Path = ROOT) -> Iterator[str]:
    """``path:line call`` for each MLflow write in a module (its path
    relative to ``root``)."""
    tree = ast.parse(path.read_text(), str(path))
    clients = client_names(tree) | {"mlflow"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mlflow"):
            for alias in node.names:
                if is_write(alias.name):
                    yield f"{path.relative_to(root)}:{node.lineno} imports {alias.name}"
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and is_write(node.func.attr)):
            continue
        receiver = _root(node.func)
        if getattr(receiver, "id", None) in clients or makes_client(receiver):
            yield f"{path.relative_to(root)}:{node.lineno} {ast.unparse(node.func)}"


def test_only_the_recording_wing_writes_to_mlflow():
    found = [line for path in sources() for line in writes(path)]
    assert not found, "MLflow writes outside components/recording/:\n" + "\n".join(found)


@pytest.mark.parametrize("code", [
    "import mlflow\nmlflow.log_metrics({})",
    "import mlflow\nmlflow.pytorch.log_model(m, 'model')",
    "from mlflow import MlflowClient\nclient = MlflowClient()\nclient.set_tag('r', 'k', 'v')",
    "def f(client: MlflowClient):\n    client.set_terminated('r')",
    "from mlflow.tracking import MlflowClient\nMlflowClient().create_registered_model('m')",
    "from mlflow import start_run",
])
def test_the_scan_sees_each_kind_of_write(tmp_path, code):
    (tmp_path / "example.py").write_text(code)
    assert list(writes(tmp_path / "example.py", tmp_path))


def test_the_scan_lets_reads_pass(tmp_path):
    (tmp_path / "example.py").write_text(
        "import mlflow\nmlflow.get_run('r')\nmlflow.MlflowClient().search_runs([])\n"
        "mlflow.set_tracking_uri('x')\nlogger.log_metrics({})")
    assert not list(writes(tmp_path / "example.py", tmp_path))


def mlflow_imports(path: Path, root: Path = ROOT) -> Iterator[str]:
    """``path:line imports <module>`` for each import of ``mlflow`` or one of
    its modules in a module, wherever it stands (at the top, in a function,
    under ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            if module == "mlflow" or module.startswith("mlflow."):
                yield f"{path.relative_to(root)}:{node.lineno} imports {module}"


def test_only_the_recording_wing_imports_mlflow():
    found = [line for path in sources() for line in mlflow_imports(path)]
    assert not found, ("MLflow imported outside components/recording/ (read through "
                       "components/recording/reads.py):\n" + "\n".join(found))


@pytest.mark.parametrize("code", [
    "import mlflow",
    "import mlflow.pyfunc as pyfunc",
    "from mlflow.tracking import MlflowClient",
    "def f():\n    import mlflow\n    return mlflow.get_tracking_uri()",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mlflow.entities import Run",
])
def test_the_import_scan_sees_each_kind_of_import(tmp_path, code):
    (tmp_path / "example.py").write_text(code)
    assert list(mlflow_imports(tmp_path / "example.py", tmp_path))


def test_the_import_scan_lets_other_modules_pass(tmp_path):
    (tmp_path / "example.py").write_text(
        "import mlflowish\nfrom components.recording.reads import get_run\n"
        "from .mlflow import x\nname = 'mlflow'")
    assert not list(mlflow_imports(tmp_path / "example.py", tmp_path))


def imported(tree: ast.Module, package: str) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for each module an import names, at module level or
    inside a function; ``from a import b`` names ``a`` and ``a.b``, a
    relative import is read from ``package``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield node.lineno, module
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"


def stage_imports(path: Path, root: Path = ROOT) -> Iterator[str]:
    """``path:line module`` for each stage module (see :data:`STAGE_MODULES`)
    a recording module imports."""
    package = ".".join(path.relative_to(root).parent.parts)
    seen = set()
    for line, module in imported(ast.parse(path.read_text(), str(path)), package):
        if line not in seen and any(module == stage or module.startswith(f"{stage}.")
                                    for stage in STAGE_MODULES):
            seen.add(line)
            yield f"{path.relative_to(root)}:{line} imports {module}"


def test_the_recording_wing_imports_no_stage():
    found = [line for path in sorted(RECORDING.rglob("*.py")) for line in stage_imports(path)]
    assert not found, "components/recording/ imports a stage:\n" + "\n".join(found)


@pytest.mark.parametrize("code", [
    "from components.evaluate import read_final",
    "import components.heart",
    "from components import load",
    "from components.storage.stage_cache import local_entry",
    "from components.storage import parquet_io",
    "def f():\n    from components.train_and_evaluate import log_final",
    "from ..train import train",
])
def test_the_import_scan_sees_each_kind_of_stage_import(tmp_path, code):
    wing = tmp_path / "components" / "recording"
    wing.mkdir(parents=True)
    (wing / "example.py").write_text(code)
    assert list(stage_imports(wing / "example.py", tmp_path))


def test_the_import_scan_lets_the_wing_s_own_imports_pass(tmp_path):
    wing = tmp_path / "components" / "recording"
    wing.mkdir(parents=True)
    (wing / "example.py").write_text(
        "import mlflow\nfrom components.recording.tags import EPOCH\n"
        "from components.storage.location import local_copy\n"
        "from components.artifacts import TrainArtifact\nfrom . import plots")
    assert not list(stage_imports(wing / "example.py", tmp_path))
