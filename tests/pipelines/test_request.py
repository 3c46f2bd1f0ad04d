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
