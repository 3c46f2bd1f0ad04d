"""Examples of using plnlp from one's own code; :mod:`examples.link_parts` is
a package of parts of one's own (docs/extending.md)."""
