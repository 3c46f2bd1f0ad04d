"""``--runs N`` summarised as a paper's table: a line per seed, then mean ± std."""
import pytest

from components.recording.seed_summary import paired, seed_line, spread_line, summary_metrics

FINALS = [{"final_valid_hits_100": 0.95, "final_test_hits_100": 0.88, "final_test_auc": 0.96},
          {"final_valid_hits_100": 0.97, "final_test_hits_100": 0.90, "final_test_auc": 0.97},
          {"final_valid_hits_100": 0.96, "final_test_hits_100": 0.86, "final_test_auc": 0.95}]


def test_the_summary_holds_each_metrics_mean_sample_std_and_the_count():
    summary = summary_metrics(FINALS)
    assert summary["final_runs"] == 3
    assert summary["final_test_hits_100_mean"] == pytest.approx(0.88)
    assert summary["final_test_hits_100_std"] == pytest.approx(0.02)  # n - 1, as papers give it
    assert summary_metrics(FINALS[:1])["final_test_auc_std"] == 0.0


def test_a_seed_prints_its_test_and_valid_figure_in_percent():
    assert seed_line(4, FINALS[1], "hits_100") == \
        "seed 4  test hits_100 90.00  valid hits_100 97.00"


def test_the_closing_line_reads_like_a_papers_table_and_a_single_run_has_none():
    assert spread_line(summary_metrics(FINALS), "test", "hits_100") == \
        "test hits_100 88.00 +- 2.00 (3 runs)"
    assert spread_line(FINALS[0], "test", "hits_100") is None


def test_means_stand_beside_their_spread():
    pairs = paired(summary_metrics(FINALS))
    assert pairs["final_test_hits_100"] == (pytest.approx(0.88), pytest.approx(0.02))
    assert pairs["final_runs"] == (3, None)
    assert pairs["final_valid_hits_100"][1] == pytest.approx(0.01)
