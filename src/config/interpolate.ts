// `${VAR}` in YAML string values (not keys, not env overrides). No escape and no default syntax, as in
// the Python sf2loki; an undefined variable is an error rather than a silent empty string.
import { ConfigError } from "../errors.ts";

const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function interpolate(value: unknown, env: Record<string, string | undefined>): unknown {
  if (typeof value === "string") {
    return value.replace(VAR, (_m, name: string) => {
      const v = env[name];
      if (v === undefined)
        throw new ConfigError(`config references undefined environment variable \${${name}}`);
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)]));
  }
  return value;
}
