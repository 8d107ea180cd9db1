"""The failure digest keeps the lines that name a failure, and nothing from a clean log."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "failure_digest.py"

CARGO_FAILURE = """\
running 3 tests
test tokio::a_case_that_passes ... ok
test tokio::a_case_that_fails ... FAILED
test basic::another_case ... ok

failures:

---- tokio::a_case_that_fails stdout ----

thread 'tokio::a_case_that_fails' panicked at tests/executor_behaviour/timers.rs:12:5:
3 fires of a 10 ms timer in 50 periods
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

failures:
    tokio::a_case_that_fails

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out
error: test failed, to rerun pass `--test executor_behaviour`
"""

CLEAN = """\
running 2 tests
test tokio::a_case_that_passes ... ok
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
"""


def run(log_dir, *extra):
    return subprocess.run([sys.executable, str(SCRIPT), "--log-dir", str(log_dir), *extra],
                          capture_output=True, text=True, check=True).stdout


def write(log_dir, package, text):
    (log_dir / package).mkdir(parents=True)
    (log_dir / package / "stdout_stderr.log").write_text(text)


def test_a_failed_cargo_test_is_named_with_its_panic_message(tmp_path):
    write(tmp_path, "rclrs_tokio_executor", CARGO_FAILURE)
    write(tmp_path, "rclrs_tokio_benchmarks", CLEAN)
    out = run(tmp_path)
    assert "failure digest: rclrs_tokio_executor" in out
    assert "test tokio::a_case_that_fails ... FAILED" in out
    assert "3 fires of a 10 ms timer in 50 periods" in out
    assert "error: test failed, to rerun pass `--test executor_behaviour`" in out
    assert "a_case_that_passes" not in out
    assert "rclrs_tokio_benchmarks" not in out


def test_clean_logs_and_a_missing_directory_print_nothing(tmp_path):
    write(tmp_path, "rclrs_tokio_executor", CLEAN)
    assert run(tmp_path) == ""
    assert run(tmp_path / "absent") == ""


def test_the_digest_stops_at_its_line_limit(tmp_path):
    write(tmp_path, "pkg", "".join(f"test case_{n} ... FAILED\n" for n in range(100)))
    lines = run(tmp_path, "--max-lines", "5").splitlines()
    assert lines[1:] == [f"test case_{n} ... FAILED" for n in range(5)] + [
        "... (more in the log)"]
