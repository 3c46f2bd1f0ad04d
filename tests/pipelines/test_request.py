"""What a planned run says about itself: the settings it changed."""
from pathlib import Path

from pipelines.planning.arguments import run_request
from pipelines.planning.run_plan import plan_run


def test_the_changed_settings_are_those_the_config_file_set_and_seed_changed(tmp_path: Path):
    config = tmp_path / "wider.yaml"
    config.write_text("hidden_channels: 12\n")
    smoke = ["--dataset", "ddi", "--preset", "smoke"]  # lr 0.01, epochs 5, hidden 32, seed 0
    plan = plan_run(run_request([*smoke, "--config", str(config), "--set", "lr=0.05",
                                 "--set", "epochs=5", "--seed", "3"]))
    assert plan.changed_settings() == {"hidden_channels": 12, "lr": 0.05, "seed": 3}
    assert plan_run(run_request(smoke)).changed_settings() == {}


def test_exponents_without_a_dot_are_numbers_in_set_and_in_config_files(tmp_path: Path):
    """PyYAML alone reads ``1e-3`` as a string (YAML 1.1), and the setting
    was refused as not a float; written by hand, it is a number."""
    config = tmp_path / "decay.yaml"
    config.write_text("l2: 5e-5\n")
    smoke = ["--dataset", "ddi", "--preset", "smoke"]
    plan = plan_run(run_request([*smoke, "--config", str(config), "--set", "lr=2E-3"]))
    assert plan.changed_settings() == {"l2": 5e-5, "lr": 0.002}
