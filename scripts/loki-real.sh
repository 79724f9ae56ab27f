#!/usr/bin/env bash
# The loki-real tier: tests against a real Grafana Loki (../shared/loki, 3.4.6), one Loki per file,
# one file at a time. `npm run test:loki-real`; .ci/run calls it after the suite. A clone without
# ../shared/loki skips the tier with one line saying why; under CI (CI=true) a missing Loki fails.
# Bounded: LOKI_REAL_TIMEOUT seconds (default 2400: the HA cases run LOKI_REAL_RUNS=3 times each).
set -euo pipefail
cd "$(dirname "$0")/.."
loki_sh="${SF2LOKI_LOKI_SH:-../shared/loki/loki.sh}"
if [ ! -f "$loki_sh" ]; then
  if [ "${CI:-}" = "true" ]; then echo "loki-real: no real Loki at $loki_sh; CI must run this tier" >&2; exit 1; fi
  echo "loki-real: skipped: no real Loki at $loki_sh (clone beside ../shared, or set SF2LOKI_LOKI_SH)"
  exit 0
fi
source scripts/use-node.sh
timeout --kill-after=30 "${LOKI_REAL_TIMEOUT:-2400}" \
  node --test --test-concurrency=1 --test-timeout=600000 --test-reporter=spec test/loki-real/*.loki.ts
