"""The one exception type the method raises for bad input."""


class PLNLPError(ValueError):
    """A setting, name or file that cannot work, described in one sentence
    that says what is wrong and how to fix it."""
