"""The README's benchmark tables are the curated results, written by
benchmarks/harness/readme_tables.py: the README in the tree matches what the script
writes from benchmarks/results/<host>/, and the script really rewrites a table whose
figures were changed by hand."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / 'benchmarks' / 'harness' / 'readme_tables.py'


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=60)


def test_the_readme_shows_the_curated_results():
    proc = run('--check')
    assert proc.returncode == 0, proc.stderr


def test_a_table_edited_by_hand_is_found_and_rewritten(tmp_path):
    readme = (ROOT / 'README.md').read_text()
    start = readme.index('<!-- results:amd -->')
    end = readme.index('<!-- /results:amd -->')
    assert '| `' in readme[start:end], 'the amd table is empty'
    edited = readme[:start] + readme[start:end].replace('|', '| 0', 3) + readme[end:]
    copy = tmp_path / 'README.md'
    copy.write_text(edited)
    assert run('--check', '--readme', str(copy)).returncode == 1
    assert run('--readme', str(copy)).returncode == 0
    assert copy.read_text() == readme
