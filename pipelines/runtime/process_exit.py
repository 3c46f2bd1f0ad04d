"""A command's process ends without CPython's last walks of its heap.

At exit CPython clears every module and collects the cyclic garbage they
leave, which walks every object the imports made: 2.0 s on 2 cores after
torch, PyG (with ``torch._dynamo`` and its sympy) and MLflow are imported,
each time a command ends. Frozen objects are left out of those collections
(0.2 s). The operating system takes the memory back as the process ends;
what must reach a disk is written and closed by its own code, and every
exit handler (Ray's shutdown, MLflow's flush) still runs first.
"""
import atexit
import gc


def skip_final_collection() -> None:
    """Freezes the heap once the exit handlers registered after this call
    have run (handlers run last registered first): call it first thing."""
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
