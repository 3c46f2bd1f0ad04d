"""A command's process freezes its heap only after its exit handlers ran."""
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import atexit, gc
atexit.register(lambda: print("after: frozen", gc.get_freeze_count() > 0))
from pipelines.runtime.process_exit import skip_final_collection
skip_final_collection()
skip_final_collection()
atexit.register(lambda: print("handler: frozen", gc.get_freeze_count() > 0))
"""


def test_the_heap_is_frozen_once_the_later_exit_handlers_have_run():
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, capture_output=True,
                          text=True, check=True)
    assert done.stdout.splitlines() == ["handler: frozen False", "after: frozen True"]
