"""A Ray worker that imports :mod:`pipelines.runtime.worker_collections` as
it starts runs full garbage collections ten times less often, its young
generations collected as before."""
import subprocess
import sys

from pipelines.runtime.worker_collections import FULL_COLLECTION_THRESHOLD
from tests.conftest import REPO_ROOT

PRELOADED = ("import gc\n"
             "before = gc.get_threshold()\n"
             "import pipelines.runtime.worker_collections\n"
             "print(*before, *gc.get_threshold())\n")


def test_importing_it_as_ray_s_preload_does_makes_full_collections_rarer():
    done = subprocess.run([sys.executable, "-c", PRELOADED], cwd=REPO_ROOT, text=True,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    young, middle, full, *after = map(int, done.stdout.split())
    assert after == [young, middle, FULL_COLLECTION_THRESHOLD]
    assert FULL_COLLECTION_THRESHOLD == 10 * full
