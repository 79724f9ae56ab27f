#!/usr/bin/env bash
# The HA proofs with real daemon processes, one file at a time (their failover bounds are timing
# assertions, kept away from the suite's parallel files): kill -9 and SIGTERM failover of every pairing,
# three lose/re-acquire cycles, a hanging Lease, and the chaos runs of #17 (the leader cut off at the wire:
# RST partition, silent blackhole, store-only blackhole; SIGSTOP on the file pairing) CHAOS_RUNS times
# each (default 3), and the sharding proofs (3 replicas x 6 orgs on k8s Leases and on S3: kill -9, a
# 4th joining, SIGTERM of all, no shard ever with two committers) once each. `npm run test:chaos`; .ci/run calls it after the suite. Bounded: CHAOS_TIMEOUT
# seconds (default 1200).
#   bash scripts/chaos.sh            # 3 runs of every case
#   CHAOS_RUNS=1 bash scripts/chaos.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/use-node.sh
export CHAOS_RUNS="${CHAOS_RUNS:-3}"
timeout --kill-after=30 "${CHAOS_TIMEOUT:-1200}" \
  node --test --test-concurrency=1 --test-reporter=spec test/chaos/*.chaos.ts
