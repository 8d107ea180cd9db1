"""The executor crate's examples (rclrs_tokio_executor/examples/) build and do what their
docs say: each runs for a few seconds on a ROS domain of its own and prints what its
callbacks heard. They spin until stopped, so the test stops them itself."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CRATE = ROOT / 'rclrs_tokio_executor'
TARGET = ROOT / 'build' / 'rclrs_tokio_executor'

# Each example, the lines its callbacks print, and how many of them a few seconds give
# at least (a message every 500 ms and 100 ms, with a 50 ms callback, respectively).
EXAMPLES = {
    'minimal_pub_sub': (('heard: hello',), 3),
    'multi_worker': (('left: average', 'right: average'), 10),
}


@pytest.fixture(scope='module')
def built():
    # From the crate's directory, so that cargo reads the workspace's .cargo/config.toml.
    proc = subprocess.run(['cargo', 'build', '--release', '--examples',
                           '--target-dir', str(TARGET)],
                          cwd=CRATE, capture_output=True, text=True, timeout=840)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return TARGET / 'release' / 'examples'


@pytest.mark.parametrize('example', sorted(EXAMPLES))
def test_the_example_runs_and_its_callbacks_are_heard(built, example, tmp_path):
    expected, at_least = EXAMPLES[example]
    env = dict(os.environ, ROS_DOMAIN_ID=str(150 + sorted(EXAMPLES).index(example)),
               ROS_LOG_DIR=str(tmp_path))
    out = tmp_path / 'out.txt'
    with out.open('w') as sink:
        proc = subprocess.Popen([str(built / example)], stdout=sink,
                                stderr=subprocess.STDOUT, env=env)
        time.sleep(4)
        still_running = proc.poll() is None
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    text = out.read_text()
    assert still_running, f'{example} ended by itself:\n{text[-3000:]}'
    for line in expected:
        heard = sum(1 for row in text.splitlines() if row.startswith(line))
        assert heard >= at_least, f'{example}: {heard} lines "{line}...":\n{text[-3000:]}'
