"""No URI's user or password in a sentence shown to a user."""
from plnlp_core.errors import PLNLPError, without_credentials


def test_a_uri_s_user_and_password_are_masked_wherever_it_is_quoted():
    assert without_credentials("no server at http://alice:pw@host:5000/api (refused)") \
        == "no server at http://***@host:5000/api (refused)"
    assert without_credentials("postgresql://mlflow:pw@db/mlflow, not s3://bucket/a@b") \
        == "postgresql://***@db/mlflow, not s3://bucket/a@b"
    assert without_credentials("https://token@host and http://host:5000") \
        == "https://***@host and http://host:5000"


def test_a_refusal_never_shows_them():
    refusal = PLNLPError("--work-dir s3://key:secret@bucket/work cannot be written")
    assert str(refusal) == "--work-dir s3://***@bucket/work cannot be written"
