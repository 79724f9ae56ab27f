#!/usr/bin/env bash
# The HA chaos runs of #17: for every pairing, the leader cut off at the wire (RST partition, silent
# blackhole, store-only blackhole) or paused (file pairing), CHAOS_RUNS times each (default 3). Too
# long for `npm test`; .ci/run calls this after the suite. Bounded: CHAOS_TIMEOUT seconds (default 900).
#   bash scripts/chaos.sh            # 3 runs of every case
#   CHAOS_RUNS=1 bash scripts/chaos.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/use-node.sh
export CHAOS_RUNS="${CHAOS_RUNS:-3}"
timeout --kill-after=30 "${CHAOS_TIMEOUT:-900}" \
  node --test --test-reporter=spec test/chaos/*.chaos.ts
