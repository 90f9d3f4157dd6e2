#!/usr/bin/env python3
"""Per-function comparison of tpi against the recorded oracle answers of one folder.

    compare.py [DIR] [-v]        DIR defaults to this folder; `no_keep/` is run with
                                 --no-keep-input-mutations (it has a tpi-test.flags file)
    TPI=path/to/tpi compare.py   another tpi binary (default: target/debug/tpi of the repo)

Prints one FAIL block per function that differs (tp_compare.diff lines), then the counts.
`tpi test tests/oracle/pytorch` gives the same verdicts with tpi's own report.
"""
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '../../../../shared/oracle'))
sys.path.insert(0, '/work/shared/oracle')
from tp_compare import diff  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith('-')]
folder = args[0] if args else HERE
verbose = '-v' in sys.argv
tpi = os.environ.get('TPI', os.path.join(HERE, '../../../target/debug/tpi'))
flags = ['--no-keep-input-mutations'] if os.path.exists(os.path.join(folder, 'tpi-test.flags')) else []
total = failed = 0
for tp in sorted(glob.glob(os.path.join(folder, '*.tp'))):
    expected = json.load(open(tp[:-3] + '.json'))
    run = subprocess.run([tpi, 'check', '--format', 'json', *flags, tp], capture_output=True, text=True)
    actual = {f['name']: f for f in json.loads(run.stdout).get('functions', [])}
    for f in expected['functions']:
        total += 1
        problems = diff(f, actual.get(f['name'], {}))
        if problems:
            failed += 1
            print(f"FAIL {os.path.basename(tp)[:-3]}:{f['name']}")
            for line in problems[: None if verbose else 6]:
                print('     ', line)
print(f'{total - failed}/{total} functions pass')
