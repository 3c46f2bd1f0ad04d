"""A config checked whole before any work: its settings, then each part of
one's own it names (:mod:`plnlp_core.parts`) built as the run would build
it and tried on a tiny graph. :mod:`~plnlp_core.preflight.checks` is the
commands' entry and imports no torch for built-in parts;
:mod:`~plnlp_core.preflight.probe` does the trying. Above the assembly of
the parts it tries, as :mod:`plnlp_core.parts` (what a part is) sits below it."""
