"""Bad input is refused with one sentence and a non-zero exit, before any
work starts."""
from pathlib import Path

import pytest

from pipelines.run import main


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--dataset", "wikics"],
         "unknown dataset 'wikics'; choose one of: citation2, citeseer, collab, cora, ddi"),
        (["--dataset", "ddi", "--set", "encoder=gin"], "unknown encoder 'gin'; choose one of:"),
        (["--dataset", "ddi", "--set", "predictor=cosine"], "unknown predictor 'cosine'"),
        (["--dataset", "ddi", "--set", "loss=mse"], "unknown loss 'mse'"),
        (["--dataset", "ddi", "--set", "sampler=uniform"], "unknown sampler 'uniform'"),
        (["--dataset", "ddi", "--set", "num_neg=0"], "num_neg must be at least 1"),
        (["--dataset", "ddi", "--set", "hidden_channels=-4"], "hidden_channels must be at least 1"),
        (["--dataset", "ddi", "--set", "loss=weighted_hinge_auc", "--set", "edge_margin=raw"],
         "with edge_margin raw needs edge weights"),
        (["--dataset", "ddi", "--set", "negatives=some"], "unknown negatives 'some'"),
        (["--dataset", "ddi", "--set", "clip_grad_norm=0"], "clip_grad_norm must be positive"),
        (["--dataset", "ddi", "--set", "select_best=median"], "unknown select_best 'median'"),
        (["--dataset", "ddi", "--set", "walk_rounds=3"], "walk_rounds and walk_positives=walks"),
        (["--dataset", "ddi", "--set", "node_input=both"], "needs node features"),
        (["--dataset", "ddi", "--set", "batchsize=3"], "unknown setting 'batchsize'"),
        (["--dataset", "ddi", "--set", "lr=fast"], "setting lr must be float"),
        (["--dataset", "ddi", "--set", "lr"], "is not KEY=VALUE"),
        (["--dataset", "ddi", "--preset", "huge"], "unknown preset 'huge' for ddi"),
        (["--dataset", "ddi", "--runs", "0"], "--runs must be at least 1"),
        (["--dataset", "ddi", "--preset", "smoke", "--num-workers", "0"],
         "--num-workers and --cpus-per-worker must"),
        (["--dataset", "ddi"], "the ddi 'paper' preset is made for a GPU and would take hours on "
                               "CPUs; add --use-gpu on a machine with GPUs, choose --preset cpu"),
        (["--dataset", "collab", "--preset", "paper"], "add --yes to run it on CPUs anyway"),
        (["--dataset", "citation2", "--set", "predictor=dot", "--set",
          "force_symmetric_predictor=false"],
         "predictor 'dot' is symmetric but ogbl-citation2 is directed"),
    ],
)
def test_bad_input_exits_non_zero_with_one_sentence(argv, expected, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ")
    assert expected in err
    assert len(err.splitlines()) == 1


def test_unreadable_config_file_is_named(tmp_path: Path, capsys):
    assert main(["--dataset", "ddi", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err


def test_config_file_that_is_not_a_mapping_is_refused(tmp_path: Path, capsys):
    path = tmp_path / "list.yaml"
    path.write_text("- lr\n- 0.1\n")
    assert main(["--dataset", "ddi", "--config", str(path)]) == 2
    assert "must be a YAML mapping" in capsys.readouterr().err


def test_a_preset_with_a_setting_the_config_does_not_know_is_refused(tmp_path, capsys,
                                                                      monkeypatch):
    import pipelines.planning.presets

    (tmp_path / "ddi.yaml").write_text("typo:\n  lr: 0.01\n  hiden_channels: 8\n")
    monkeypatch.setattr(pipelines.planning.presets, "PRESETS_DIR", tmp_path)
    assert main(["--dataset", "ddi", "--preset", "typo"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: preset 'typo' in {tmp_path / 'ddi.yaml'} sets unknown "
                          "hiden_channels; fix the preset file")
    assert len(err.splitlines()) == 1


def test_a_gpu_preset_asks_at_a_terminal_and_stops_unless_told_yes(monkeypatch, capsys):
    import sys

    asked = []
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda question: asked.append(question) or "n")
    assert main(["--dataset", "ddi"]) == 2
    assert "Run it on CPUs anyway? [y/N]" in asked[0]
    assert "add --yes" in capsys.readouterr().err


@pytest.mark.parametrize(("script", "argv"), [
    ("pipelines.run", ["--help"]),
    ("pipelines.run", ["--dataset", "ddi", "--set", "encoder=gin"]),
    ("pipelines.run", ["--dataset", "ddi"]),  # a GPU preset refused on CPUs
    ("pipelines.tune", ["--dataset", "ddi", "--space", "tune_spaces/ddi.yaml", "--set", "lr=x"]),
    ("pipelines.register", ["--help"]),
])
def test_help_and_refusals_import_neither_ray_nor_mlflow(script, argv):
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    probe = (f"import sys\nfrom {script} import main\n"
             f"try:\n    code = main({argv!r})\nexcept SystemExit as exit:\n    code = exit.code\n"
             "print(code, 'ray' in sys.modules, 'mlflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL).stdout.split()
    assert out[-3:] == ["0" if "--help" in argv else "2", "False", "False"]
