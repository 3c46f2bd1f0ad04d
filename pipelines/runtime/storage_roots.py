"""Where a run's files go, from its flags: ``--work-dir`` and ``--data-root``
become :class:`~components.storage.location.Location`\\ s here, once, and the
stages take those (they accept nothing else)."""
from dataclasses import dataclass

from components.storage.location import Location
from components.storage.stage_cache import stage_cache_root
from components.train.checkpoint_writer import checkpoint_root
from plnlp_core.data.datasets import data_root_setting


@dataclass(frozen=True)
class StorageRoots:
    """``work``: the ``--work-dir`` (``None``: this machine's cache);
    ``data``: the ``--data-root``, else its default (see
    :func:`plnlp_core.data.datasets.data_root_setting`)."""

    work: Location | None
    data: Location

    @classmethod
    def of(cls, work_dir: str | None, data_root: str | None = None) -> "StorageRoots":
        """The roots the flags ``work_dir`` and ``data_root`` name."""
        return cls(Location(work_dir) if work_dir else None,
                   Location(data_root_setting(data_root)))

    @property
    def stages(self) -> Location:
        """The stage cache (see :func:`components.storage.stage_cache.stage_cache_root`)."""
        return stage_cache_root(self.work)

    @property
    def checkpoints(self) -> Location:
        """The runs' checkpoints (:func:`components.train.checkpoint_writer.checkpoint_root`)."""
        return checkpoint_root(self.work)

    def sources(self) -> tuple[str, str | None]:
        """The data root's and the work folder's URIs, as a run's tags hold them."""
        return self.data.uri, self.work and self.work.uri
