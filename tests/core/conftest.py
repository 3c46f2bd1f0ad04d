"""Fixtures the core tests share: the OGB-layout ddi stand-in, loaded once."""
from pathlib import Path

import pytest

from plnlp_core.datasets import DATASETS, LinkSplit
from plnlp_core.ogb_reader import load_ogb
from tests.standin import write_ddi_standin


@pytest.fixture(scope="session")
def ddi_standin_split(tmp_path_factory: pytest.TempPathFactory) -> LinkSplit:
    """The stand-in ddi (60 nodes, 320 train edges), loaded by ``load_ogb``."""
    root = write_ddi_standin(tmp_path_factory.mktemp("ddi-root"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PLNLP_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return load_ogb(DATASETS.get("ddi"), Path(root))
