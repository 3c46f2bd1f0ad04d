"""Stand-ins cached under ``cache_dir() / "standins"``, each generated once
and published atomically (:func:`plnlp_core.data.publishing.publish`)."""
import time
from pathlib import Path

from plnlp_core.data.datasets import DatasetInfo, cache_dir
from plnlp_core.data.publishing import publish, remove_stale_scratch
from plnlp_core.data.standins.ogb_writer import write_standin
from plnlp_core.data.standins.sizing import (
    StandinSize,
    check_standin_size,
    describe,
    standin_info,
    standin_size,
)

FORMAT_VERSION = 1
"""Part of every cache key: a change to the files stand-ins are written as
raises it."""


def cached_standin(dataset: str, size: StandinSize | str = "tiny", seed: int = 0) -> Path:
    """A data root holding a stand-in of ``dataset``, under
    ``cache_dir() / "standins" / <key>`` (the key names the dataset, the
    size's numbers, the seed and :obj:`FORMAT_VERSION`). It is generated in a
    scratch folder beside it and renamed into place when complete; a later
    call reuses it. Of two processes generating it at once, the one that
    renames second discards its scratch folder.

    Args:
        dataset (str): ``ddi``, ``collab``, ``ppa`` or ``citation2``.
        size (StandinSize or str): A size, or a name in :obj:`SIZES`.
        seed (int): Seed of the generator.
    """
    info = standin_info(dataset)
    size = standin_size(dataset, size) if isinstance(size, str) else size
    final = cache_dir() / "standins" / _cache_key(info, size, seed)
    if final.is_dir():
        print(f"reusing the {info.ogb_name} stand-in at {final}")
        return final
    check_standin_size(dataset, size)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_scratch(final, hidden=False)
    print(f"generating {describe(info, size)} at {final}")
    started = time.perf_counter()
    if not publish(final, lambda scratch: write_standin(dataset, scratch, size, seed),
                   hidden=False):
        print(f"reusing the {info.ogb_name} stand-in another process wrote at {final}")
        return final
    print(f"generated it in {time.perf_counter() - started:.1f} s")
    return final


def _cache_key(info: DatasetInfo, size: StandinSize, seed: int) -> str:
    numbers = (size.num_nodes, size.train, size.valid, size.test, size.valid_neg, size.test_neg,
               size.feature_dim)
    return f"{info.name}-{'-'.join(map(str, numbers))}-seed{seed}-v{FORMAT_VERSION}"
