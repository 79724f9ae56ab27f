#!/usr/bin/env bash
# End-to-end checks too big for the suite's five minutes (a million rows through the whole daemon),
# one file at a time. `.ci/run` calls it after the suite. Bounded: SLOW_TIMEOUT seconds (default 900).
#   bash scripts/slow.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/use-node.sh
timeout --kill-after=30 "${SLOW_TIMEOUT:-900}" \
  node --test --test-concurrency=1 --test-reporter=spec test/slow/*.slow.ts
