"""The one exception type the method raises for bad input, and what every
sentence shown to a user goes through: no URI's credentials in it."""
import re

_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")
"""The ``user:password@`` of a URI (``http://alice:pw@host:5000``,
``postgresql://mlflow:pw@db/mlflow``, ``s3://key:secret@bucket``)."""


class PLNLPError(ValueError):
    """A setting, name or file that cannot work, described in one sentence
    that says what is wrong and how to fix it (credentials of a URI it
    quotes masked: :func:`without_credentials`)."""

    def __str__(self) -> str:
        return without_credentials(super().__str__())


def without_credentials(text: str) -> str:
    """``text`` with the user and password of every URI in it shown as
    ``***``: a failure's sentence goes to the console, logs and MLflow."""
    return _CREDENTIALS.sub("***@", text)


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message, or its type's name if it has none."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
