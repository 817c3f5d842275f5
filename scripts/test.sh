#!/usr/bin/env bash
# The test command (README): the whole suite, with the services it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
export OCRSERVE_TEST_THREADS=${OCRSERVE_TEST_THREADS:-1}
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
