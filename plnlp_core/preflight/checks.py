"""A config checked whole before any work: its settings
(:meth:`~plnlp_core.config.PLNLPConfig.validate`, without torch), then each
part of one's own it names, imported and tried on a tiny graph
(:func:`plnlp_core.preflight.probe.check_parts`), which imports torch only for
a config that names one. The commands plan with it."""
from plnlp_core.config import PLNLPConfig
from plnlp_core.config_checks import names_own_parts
from plnlp_core.data.datasets import DatasetInfo


def check_config(config: PLNLPConfig, info: DatasetInfo | None = None) -> DatasetInfo:
    """Refuses the first impossible setting or unusable part of ``config``
    on the dataset ``info`` (default: ``config.dataset``'s) in one sentence;
    returns the dataset's description."""
    info = config.validate(info)
    if names_own_parts(config):
        from plnlp_core.preflight.probe import check_parts  # torch, for parts of one's own alone

        check_parts(config, info)
    return info
