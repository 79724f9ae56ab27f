// The proxy variables of this test process, set for a test file and put back after it. They are per
// process, and node --test runs each file in its own, but a file still leaves them as it found them.

export const PROXY_VARIABLES = [
  "http_proxy",
  "https_proxy",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "no_proxy",
  "NO_PROXY",
];

/** Clears every proxy variable, sets `vars`, and returns what puts the old values back. */
export function setProxyVariables(vars: Record<string, string>): () => void {
  const saved = PROXY_VARIABLES.map((name) => [name, process.env[name]] as const);
  for (const name of PROXY_VARIABLES) Reflect.deleteProperty(process.env, name);
  Object.assign(process.env, vars);
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) Reflect.deleteProperty(process.env, name);
      else process.env[name] = value;
    }
  };
}
