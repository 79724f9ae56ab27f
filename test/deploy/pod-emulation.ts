// Runs sf2loki the way a rendered Deployment's container would: its args, its env (fieldRefs and
// secretKeyRefs resolved), its ConfigMap and Secret mounted as files. The container's absolute mount
// paths are materialised under a temporary root, and every reference to them in args, env and the
// config is moved there (the only rewrite); test-only SF2LOKI_* overrides point the daemon at the
// simulated org, Loki receiver and emulators, as an operator's env overrides would.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { configText, containerEnv, deploymentOf, type K8sObject } from "./kustomize-render.ts";

const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;

export interface PodInput {
  objects: readonly K8sObject[];
  root: string;
  pod: { name: string; namespace: string };
  /** `<secret>/<key>` → content, for env secretKeyRefs and Secret volume files. */
  secrets: Record<string, string>;
  overrides: Record<string, string>;
}

export interface PodProcess {
  child: ChildProcess;
  /** The health server's URL, once it logged it. */
  healthUrl(ms: number): Promise<string>;
  stderrTail(): string;
  stop(): Promise<void>;
}

/** Moves every mount path the container declares (but /tmp) under `root`. */
function relocator(mounts: readonly string[], root: string): (text: string) => string {
  const paths = mounts.filter((p) => p !== "/tmp").sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const p of paths) out = out.replace(new RegExp(`(?<![\\w/])${p}(?=/|\\b)`, "g"), join(root, p));
    return out;
  };
}

/** Writes the container's volumes under `input.root`; returns the argv and env to start it with. */
export function materialise(input: PodInput): { argv: string[]; env: Record<string, string> } {
  const { deployment, container } = deploymentOf(input.objects);
  const volumes = new Map((deployment.spec.template.spec.volumes ?? []).map((v) => [v.name, v]));
  const mounts = container.volumeMounts ?? [];
  const move = relocator(
    mounts.map((m) => m.mountPath),
    input.root,
  );
  for (const m of mounts) {
    const volume = volumes.get(m.name);
    if (!volume) throw new Error(`volumeMount ${m.name} has no volume`);
    const target = join(input.root, m.mountPath);
    if ("configMap" in volume) {
      if (m.subPath !== "config.yaml")
        throw new Error(`ConfigMap mount ${m.mountPath} without subPath config.yaml`);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, move(configText(input.objects)));
    } else if ("secret" in volume) {
      const name = (volume.secret as { secretName: string }).secretName;
      mkdirSync(target, { recursive: true });
      for (const [ref, value] of Object.entries(input.secrets)) {
        const [secret, key] = ref.split("/");
        if (secret === name && key) writeFileSync(join(target, key), value);
      }
    } else {
      mkdirSync(target, { recursive: true }); // emptyDir, PVC
    }
  }
  const env = containerEnv(container, input.pod, input.secrets);
  for (const k of Object.keys(env)) env[k] = move(env[k]!);
  const argv = [...(container.command ?? []), ...(container.args ?? [])].map(move);
  return { argv, env: { ...env, ...input.overrides } };
}

/** Starts `sf2loki <args>` (the image's ENTRYPOINT) with only the pod's env plus PATH and HOME. */
export function startPod(input: PodInput): PodProcess {
  const { argv, env } = materialise(input);
  const child = spawn(process.execPath, [BIN, ...argv], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH ?? "", HOME: input.root, HOSTNAME: input.pod.name, ...env },
  });
  // The JSON log is on stdout (the Python version's place), errors on stderr; both feed the tail.
  let stderr = "";
  const listening = Promise.withResolvers<string>();
  let partial = "";
  const consume = (chunk: Buffer): void => {
    const text = chunk.toString("utf8");
    stderr += text;
    const lines = (partial + text).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.includes('"health server listening"')) continue;
      const parsed = JSON.parse(line) as { url?: unknown };
      if (typeof parsed.url === "string") listening.resolve(parsed.url);
    }
  };
  child.stdout.on("data", consume);
  child.stderr.on("data", consume);
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => {
      listening.reject(new Error(`sf2loki exited before serving health; stderr:\n${stderr.slice(-3000)}`));
      resolve();
    });
  });
  listening.promise.catch(() => undefined); // observed by healthUrl(); never unhandled
  return {
    child,
    healthUrl: (ms) => {
      const timeout = AbortSignal.timeout(ms);
      return Promise.race([
        listening.promise,
        new Promise<string>((_, reject) => {
          timeout.addEventListener("abort", () => {
            reject(new Error(`no health server within ${ms} ms; stderr:\n${stderr.slice(-3000)}`));
          });
        }),
      ]);
    },
    stderrTail: () => stderr.slice(-3000),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
      }, 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
