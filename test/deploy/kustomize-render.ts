// Renders deploy/kubernetes with `kubectl kustomize` (the Kustomize built into kubectl) and gives the
// tests typed access to what they check: the Deployment's container, the ConfigMap's config, RBAC,
// the PDB. Also reads what the image promises (Dockerfile ENTRYPOINT, CMD, USER), so manifests and
// image are checked against each other.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

export const KUSTOMIZE_DIR = new URL("../../deploy/kubernetes/", import.meta.url).pathname;
export const OVERLAYS = ["single", "ha-k8s-lease", "ha-object-lease"] as const;
export type Overlay = (typeof OVERLAYS)[number];

export type K8sObject = { kind: string; metadata: { name: string } } & Record<string, unknown>;

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    fieldRef?: { fieldPath: string };
    secretKeyRef?: { name: string; key: string };
  };
}

export interface Probe {
  httpGet: { path: string; port: string | number };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  ports?: { name?: string; containerPort: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  securityContext?: Record<string, unknown>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string; subPath?: string; readOnly?: boolean }[];
}

export interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  terminationGracePeriodSeconds?: number;
  securityContext?: Record<string, unknown>;
  containers: Container[];
  volumes?: ({ name: string } & Record<string, unknown>)[];
}

export interface Deployment extends K8sObject {
  spec: {
    replicas: number;
    strategy: {
      type: string;
      rollingUpdate?: { maxSurge?: string | number; maxUnavailable?: string | number };
    };
    template: { spec: PodSpec };
  };
}

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}

/** `kubectl kustomize <dir>` parsed into objects. Throws with kubectl's own message on failure. */
export function render(dir: string): K8sObject[] {
  const text = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8", timeout: 30_000 });
  return parseAllDocuments(text).map((d) => d.toJS() as K8sObject);
}

export function renderOverlay(overlay: Overlay): K8sObject[] {
  return render(`${KUSTOMIZE_DIR}overlays/${overlay}`);
}

/** The one object of `kind`. */
export function only(objects: readonly K8sObject[], kind: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new Error(`expected exactly one ${kind}, rendered ${found.length}`);
  return found[0]!;
}

export function deploymentOf(objects: readonly K8sObject[]): {
  deployment: Deployment;
  container: Container;
} {
  const deployment = only(objects, "Deployment") as Deployment;
  const container = deployment.spec.template.spec.containers[0];
  if (!container) throw new Error("the Deployment has no container");
  return { deployment, container };
}

/** The config.yaml text of the rendered ConfigMap the container mounts. */
export function configText(objects: readonly K8sObject[]): string {
  const cm = only(objects, "ConfigMap") as K8sObject & { data: Record<string, string> };
  const text = cm.data["config.yaml"];
  if (text === undefined) throw new Error(`ConfigMap ${cm.metadata.name} has no config.yaml`);
  return text;
}

/** The port a probe or Service names, resolved against the container's ports. */
export function portNumber(container: Container, port: string | number): number {
  if (typeof port === "number") return port;
  const found = container.ports?.find((p) => p.name === port);
  if (!found) throw new Error(`container ${container.name} has no port named ${port}`);
  return found.containerPort;
}

/** What the Dockerfile's runtime stage promises: exec-form ENTRYPOINT and CMD, USER. */
export function imageContract(): { entrypoint: string[]; cmd: string[]; user: string } {
  const text = readFileSync(new URL("../../Dockerfile", import.meta.url), "utf8");
  const last = (directive: string): string => {
    const lines = text.split("\n").filter((l) => l.startsWith(`${directive} `));
    const line = lines.at(-1);
    if (line === undefined) throw new Error(`the Dockerfile has no ${directive}`);
    return line.slice(directive.length + 1).trim();
  };
  return {
    entrypoint: JSON.parse(last("ENTRYPOINT")) as string[],
    cmd: JSON.parse(last("CMD")) as string[],
    user: last("USER"),
  };
}

/**
 * The container's environment as the kubelet builds it: literal values with `$(VAR)` expanded from
 * variables defined earlier in the list (later ones stay literal, as in Kubernetes), fieldRefs from
 * `pod`, secretKeyRefs from `secrets` (`<secret>/<key>`).
 */
export function containerEnv(
  container: Container,
  pod: { name: string; namespace: string },
  secrets: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const v of container.env ?? []) {
    if (v.value !== undefined) {
      env[v.name] = v.value.replace(
        /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g,
        (ref, name: string) => env[name] ?? ref,
      );
    } else if (v.valueFrom?.fieldRef) {
      const path = v.valueFrom.fieldRef.fieldPath;
      const value = { "metadata.name": pod.name, "metadata.namespace": pod.namespace }[path];
      if (value === undefined) throw new Error(`env ${v.name}: fieldRef ${path} is not emulated`);
      env[v.name] = value;
    } else if (v.valueFrom?.secretKeyRef) {
      const ref = `${v.valueFrom.secretKeyRef.name}/${v.valueFrom.secretKeyRef.key}`;
      const value = secrets[ref];
      if (value === undefined) throw new Error(`env ${v.name}: no test value for secret ${ref}`);
      env[v.name] = value;
    } else {
      throw new Error(`env ${v.name}: neither a value nor a supported valueFrom`);
    }
  }
  return env;
}
