#!/usr/bin/env bash
# Checks and unit-tests the Prometheus rules with Prometheus's own promtool: `promtool check rules`
# on every rule file, `promtool test rules` on the unit tests (each alert fires on series shaped like
# the daemon's /metrics and stays quiet on a healthy daemon; test/deploy/ holds the tests to that).
# .ci/run calls it after the suite. Installs the Debian `prometheus` package for promtool when it is
# missing; where that cannot be done it skips with one line, except under CI (CI=true), where a
# missing promtool fails. Bounded: the install by RULES_TEST_INSTALL_TIMEOUT (240 s), each promtool
# run by 60 s.
set -euo pipefail
cd "$(dirname "$0")/.."
RULES=deploy/grafana/rules/prometheus

if ! command -v promtool >/dev/null; then
  echo "rules-test: installing promtool (Debian package prometheus)" >&2
  timeout "${RULES_TEST_INSTALL_TIMEOUT:-240}" bash -c \
    'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus' \
    >/dev/null 2>&1 || true
fi
if ! command -v promtool >/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "rules-test: promtool is missing and apt-get could not install it (package prometheus); CI must run the rule tests" >&2
    exit 1
  fi
  echo "rules-test: skipped: no promtool, and apt-get could not install it (run as root: apt-get install prometheus)"
  exit 0
fi
promtool --version | head -1
timeout 60 promtool check rules "$RULES"/*.yaml
timeout 60 promtool test rules "$RULES"/tests/*.yaml
