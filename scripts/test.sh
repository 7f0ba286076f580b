#!/usr/bin/env bash
# The whole test suite on a fresh or existing machine: environment, build, pytest.
# Extra arguments go to pytest. Fails on any failure, and when no test ran (all skipped or none collected).
set -euo pipefail
source "$(dirname "$0")/env.sh"
report="$(mktemp -d)/junit.xml"
python -m pytest tests -ra --junitxml="$report" "$@"
python - "$report" <<'PY'
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
count = lambda key: sum(int(s.get(key, 0)) for s in suites)
ran = count("tests") - count("skipped")
if ran <= 0:
    sys.exit("softdtw-torch: no test ran (none collected or all skipped): failing")
print(f"softdtw-torch: {ran} tests ran, {count('skipped')} skipped, {count('failures') + count('errors')} failed")
PY
