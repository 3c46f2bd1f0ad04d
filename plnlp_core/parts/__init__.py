"""Parts of one's own: an encoder layer, a predictor, a loss or a negative
sampler a config names by import path, ``module.path:ClassName``, instead of
a built-in name. :mod:`~plnlp_core.parts.import_path` finds them (no torch),
:mod:`~plnlp_core.parts.kinds` says what each kind must be and builds it;
:mod:`plnlp_core.preflight` tries them on a tiny graph before any work.
docs/extending.md walks through writing, running and serving one."""
