"""The one exception type the method raises for bad input."""


class PLNLPError(ValueError):
    """A setting, name or file that cannot work, described in one sentence
    that says what is wrong and how to fix it."""


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message, or its type's name if it has none."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
