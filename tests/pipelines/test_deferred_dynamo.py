"""``torch._dynamo`` runs at its first use, not when PyG is imported
(:mod:`pipelines.runtime.deferred_dynamo`); each check runs in a fresh
interpreter, since this one has used it already."""
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

# a module that importing torch._dynamo runs, and an import of PyG does not need
DYNAMO_RAN = "'torch._dynamo.convert_frame' in sys.modules"

DEFERRED = f"""
import sys
import pipelines  # the command lines' package installs the deferral
import torch, torch_geometric
from torch_geometric.isinstance import is_torch_instance
assert not {DYNAMO_RAN}, "PyG's import ran torch._dynamo"
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.memory_estimate import parameter_count
# a driver's memory check: 100 x 8 embedding, two SAGE layers of 2 x 8 x 8 + 8, DOT
assert parameter_count(PLNLPConfig(embedding_dim=8, hidden_channels=8), DATASETS.get("ddi"),
                       100) == 100 * 8 + 2 * (2 * 8 * 8 + 8)
assert not {DYNAMO_RAN}, "counting the model's parameters ran torch._dynamo"
# its first call imports torch.distributed.tensor, whose custom ops read every module's __file__
torch.testing.assert_close(torch.ones(2), torch.ones(2))
linear = torch.nn.Linear(4, 2)
compiled = torch.compile(linear, backend="eager")
assert torch.equal(compiled(torch.ones(1, 4)), linear(torch.ones(1, 4)))
assert {DYNAMO_RAN}
assert isinstance(compiled, torch._dynamo.OptimizedModule)
assert is_torch_instance(compiled, torch.nn.Linear)
torch.optim.Adam(linear.parameters())
"""

EAGER = f"""
import sys
import torch, torch_geometric
assert {DYNAMO_RAN}
"""


LIBRARY_ALONE = """
import sys
hooks = len(sys.meta_path)
import plnlp_core
assert len(sys.meta_path) == hooks, sys.meta_path
import plnlp_core.assembly  # the whole model; six, which PyG's imports bring, adds its own hook
ours = [f for f in sys.meta_path if type(f).__module__.startswith(("plnlp_core", "pipelines"))]
assert not ours, ours
"""


def run_python(source: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", source], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)


def test_pyg_imported_after_plnlp_core_leaves_dynamo_to_its_first_use_which_works():
    """A driver's count of the model's parameters does not use it; after
    ``torch.testing.assert_close`` (which left the lazily loaded module of
    the deferral's first form half run), the compiled model runs, PyG sees
    through it, an optimiser builds."""
    done = run_python(DEFERRED)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow  # a fresh process importing torch and PyG in full: 3.6 CPU-s
def test_pyg_on_its_own_still_imports_dynamo_with_itself():
    """The reason the deferral exists: were a PyG release to defer
    ``torch._dynamo`` itself, this fails and the module can go."""
    done = run_python(EAGER)
    assert done.returncode == 0, done.stderr[-2000:]


def test_importing_the_method_library_changes_no_other_packages_imports():
    done = run_python(LIBRARY_ALONE)
    assert done.returncode == 0, done.stderr[-2000:]
