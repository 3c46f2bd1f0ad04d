"""YAML as settings are written by hand: ``1e-3`` is a number.

PyYAML follows YAML 1.1, whose floats need a dot (``1.0e-3``), so ``--set
lr=1e-3`` or ``lr: 1e-3`` in a config file came through as the string
``'1e-3'`` and was refused as not a float. YAML 1.2 (and JSON) read it as
a number; so does every reading of settings here."""
import re

import yaml

_FLOAT = re.compile(r"""^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$""")


class SettingsLoader(yaml.SafeLoader):
    """PyYAML's safe loader, with YAML 1.2's exponents without a dot."""


SettingsLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789"))


def read_settings_yaml(text: str) -> object:
    """``text`` as YAML, with ``1e-3`` read as the float 0.001."""
    return yaml.load(text, Loader=SettingsLoader)  # noqa: S506 (a SafeLoader)
