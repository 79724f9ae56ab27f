#!/usr/bin/env bash
# Checks and unit-tests the Prometheus rules with Prometheus's own promtool: `promtool check rules`
# on every rule file, `promtool test rules` on the unit tests (each alert fires and stays quiet on
# synthetic series). Installs the Debian `prometheus` package for promtool when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
RULES=deploy/grafana/rules/prometheus

if ! command -v promtool >/dev/null; then
  echo "rules-test: installing promtool (Debian package prometheus)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool --version | head -1
promtool check rules "$RULES"/*.yaml
promtool test rules "$RULES"/tests/*.yaml
