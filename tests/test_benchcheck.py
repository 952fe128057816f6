"""bench.benchcheck on hand-made pytest-benchmark JSON: read against the calibration, a case's best
run counts, overhead figures reported and never failed on, and its exit statuses."""
import json

from bench.benchcheck import main

PREFIX = "tests/test_benchmarks.py::"


def case(name, seconds, ratio=None, calibration="rule", **extra):
    info = dict(extra)
    if ratio is not None:
        info.update(calibration=calibration, ratio=ratio, calibration_s=seconds / ratio)
    return {"name": name, "fullname": PREFIX + name, "stats": {"min": seconds, "median": seconds, "mean": seconds},
            "extra_info": info}


def write(path, *cases):
    path.write_text(json.dumps({"machine_info": {}, "benchmarks": list(cases)}))
    return str(path)


def test_a_slower_machine_is_no_regression_but_a_slower_case_is(tmp_path, capsys):
    base = write(tmp_path / "base.json", case("test_select[a]", 0.004, 1.0), case("test_select[b]", 0.004, 1.0))
    # both cases 3x slower in seconds: a slower machine (ratio kept) and a slower case (ratio tripled)
    now = write(tmp_path / "now.json", case("test_select[a]", 0.012, 1.05), case("test_select[b]", 0.012, 3.0))
    assert main([base, now]) == 1
    out = capsys.readouterr().out
    assert "test_select[a]" in out and "REGRESSION: 3.00x slower vs rule" in out
    assert next(line for line in out.splitlines() if "REGRESSION" in line).startswith("test_select[b]")
    assert main([base, now, "--limit", "3.5"]) == 0


def test_a_case_counts_at_its_best_run(tmp_path):
    base = write(tmp_path / "base.json", case("test_select[a]", 0.004, 1.0))
    noisy = write(tmp_path / "noisy.json", case("test_select[a]", 0.012, 2.9))
    calm = write(tmp_path / "calm.json", case("test_select[a]", 0.004, 1.1))
    assert main([base, noisy]) == 1
    assert main([base, noisy, calm]) == 0


def test_without_a_ratio_seconds_are_compared(tmp_path):
    base = write(tmp_path / "base.json", case("test_x", 1.0))
    assert main([base, write(tmp_path / "now.json", case("test_x", 2.0))]) == 0
    assert main([base, write(tmp_path / "slow.json", case("test_x", 3.0))]) == 1


def test_overhead_is_reported_and_never_failed_on(tmp_path, capsys):
    base = write(tmp_path / "base.json", case("test_decode_overhead[s]", 1.0, overhead=0.025))
    now = write(tmp_path / "now.json", case("test_decode_overhead[s]", 9.0, overhead=0.19))
    assert main([base, now]) == 0
    assert "overhead 19.00% (baseline 2.50%)" in capsys.readouterr().out


def test_new_and_missing_cases_do_not_fail_and_other_calibrations_do_not_compare(tmp_path, capsys):
    base = write(tmp_path / "base.json", case("test_a", 0.01, 1.0), case("test_b", 0.01, 1.0))
    now = write(tmp_path / "now.json", case("test_a", 0.01, 9.0, calibration="perceptron"), case("test_c", 0.01, 1.0))
    assert main([base, now]) == 3    # test_a read against another calibration, test_b and test_c in one file only
    out = capsys.readouterr().out
    assert "not comparable" in out and "missing" in out and "new" in out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    base = write(tmp_path / "base.json", case("test_a", 0.01, 1.0))
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"rows": []}))
    for argv in ([base, str(tmp_path / "bad.json")], [base, str(tmp_path / "other.json")],
                 [base, str(tmp_path / "absent.json")], [base], [base, base, "--run", str(tmp_path)],
                 [base, base, "--limit", "1"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
