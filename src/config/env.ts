// SF2LOKI_ environment overrides: `SF2LOKI_SINK__LOKI__URL` sets sink.loki.url. Env wins over the
// file and is deep-merged into it, so setting one leaf keeps its YAML siblings (spec C §4.2).

export const ENV_PREFIX = "SF2LOKI_";

type Tree = Record<string, unknown>;

const isTree = (v: unknown): v is Tree => typeof v === "object" && v !== null && !Array.isArray(v);

/** Maps and lists are given as JSON; everything else stays a string for the schema to coerce. */
function envValue(raw: string): unknown {
  const t = raw.trim();
  if (t.startsWith("{") || t.startsWith("[")) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      return raw;
    }
  }
  return raw;
}

/** The override tree. Unknown top-level names are ignored (other tools share the prefix). */
export function envOverrides(env: Record<string, string | undefined>, rootKeys: ReadonlySet<string>): Tree {
  const out: Tree = {};
  const names = Object.keys(env)
    .filter((n) => n.toUpperCase().startsWith(ENV_PREFIX))
    .sort();
  for (const name of names) {
    const raw = env[name];
    if (raw === undefined) continue;
    const path = name.slice(ENV_PREFIX.length).toLowerCase().split("__");
    if (path.some((p) => p === "") || !rootKeys.has(path[0]!)) continue;
    let node = out;
    for (const seg of path.slice(0, -1)) {
      const next = node[seg];
      node = isTree(next) ? next : (node[seg] = {});
    }
    node[path.at(-1)!] = envValue(raw);
  }
  return out;
}

/** Deep merge: maps merge key by key (env wins), everything else is replaced. */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (!isTree(base) || !isTree(over)) return over;
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = k in base ? deepMerge(base[k], v) : v;
  return out;
}
