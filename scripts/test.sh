#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up a Debian 12 machine, builds warpscope with warnings as errors, and runs every test
# (labels unit and integration; gpu tests skip themselves without a device).
#   scripts/test.sh              everything
#   scripts/test.sh -L unit      only the unit tests (extra args go to ctest)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test
# The OpenTelemetry JS SDK that the OTLP ingest test sends with (versions pinned by its lock).
npm ci --prefix test/peers/otel_sdk --no-audit --no-fund --loglevel=error >/dev/null

jobs=$(nproc)
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$jobs"
# ctest starts the tests it knows to be longest first, from the costs of earlier runs; a fresh
# build has none and would run them in declaration order, leaving a long one for the end. The
# costs of a full run (test/ctest_costs.txt: name, runs, seconds; the tests over 2 s) seed it.
# Refresh them from build/ci/Testing/Temporary/CTestCostData.txt after a full run.
costs=build/ci/Testing/Temporary/CTestCostData.txt
if [[ ! -f "$costs" ]]; then
  mkdir -p "$(dirname "$costs")"
  cp test/ctest_costs.txt "$costs"
fi
ctest --preset ci -j "$jobs" --timeout 300 "$@"
