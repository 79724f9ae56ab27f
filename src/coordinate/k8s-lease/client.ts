// Builds the LeaseApi adapter on @kubernetes/client-node. Loaded only when a k8s_lease coordinator runs.
import {
  CoordinationV1Api,
  KubeConfig,
  Observable,
  V1Lease,
  V1LeaseSpec,
  V1MicroTime,
  V1ObjectMeta,
  type ConfigurationOptions,
  type ObservableMiddleware,
} from "@kubernetes/client-node";
import { ConfigError, describeError } from "../../errors.ts";
import { proxyFor } from "../../util/proxy-env.ts";
import { unreachable } from "../../util/proxy-fault.ts";
import type { LeaseApi, LeaseObject } from "./api.ts";

export function leaseApiFor(kc: KubeConfig, namespace: string, name: string): LeaseApi {
  const api = kc.makeApiClient(CoordinationV1Api);
  const server = kc.getCurrentCluster()?.server;
  const call = (fn: () => Promise<V1Lease>): Promise<LeaseObject> =>
    fn().then(fromV1, (err: unknown) => {
      throw namingProxy(err, server);
    });
  return {
    read: (signal) => call(() => api.readNamespacedLease({ name, namespace }, withSignal(signal))),
    create: (body, signal, opts) =>
      call(() =>
        api.createNamespacedLease({ namespace, body: toV1(body), ...dryRun(opts) }, withSignal(signal)),
      ),
    replace: (body, signal, opts) =>
      call(() =>
        api.replaceNamespacedLease(
          { name, namespace, body: toV1(body), ...dryRun(opts) },
          withSignal(signal),
        ),
      ),
  };
}

/** A socket failure on the way to the API server through a proxy is the proxy's: say so (#34). */
function namingProxy(err: unknown, server: string | undefined): unknown {
  if (server === undefined) return err;
  const { text, hint, proxied } = unreachable(err, server);
  return proxied ? new Error(`${text}; ${hint}`, { cause: err }) : err;
}

function dryRun(opts: { dryRun?: boolean } | undefined): { dryRun?: string } {
  return opts?.dryRun ? { dryRun: "All" } : {};
}

function toV1(lease: LeaseObject): V1Lease {
  const out = new V1Lease();
  out.apiVersion = "coordination.k8s.io/v1";
  out.kind = "Lease";
  out.metadata = Object.assign(new V1ObjectMeta(), lease.metadata);
  const { renewTime, acquireTime, ...rest } = lease.spec;
  const spec = Object.assign(new V1LeaseSpec(), withoutNulls(rest));
  if (renewTime) spec.renewTime = new V1MicroTime(renewTime);
  if (acquireTime) spec.acquireTime = new V1MicroTime(acquireTime);
  out.spec = spec;
  return out;
}

export function fromV1(lease: V1Lease): LeaseObject {
  const m = lease.metadata;
  const s = lease.spec;
  return {
    metadata: {
      ...(m?.name !== undefined && { name: m.name }),
      ...(m?.namespace !== undefined && { namespace: m.namespace }),
      ...(m?.resourceVersion !== undefined && { resourceVersion: m.resourceVersion }),
      ...(m?.labels !== undefined && { labels: m.labels }),
      ...(m?.annotations !== undefined && { annotations: m.annotations }),
    },
    spec: {
      holderIdentity: s?.holderIdentity ?? null,
      leaseDurationSeconds: s?.leaseDurationSeconds ?? null,
      leaseTransitions: s?.leaseTransitions ?? null,
      renewTime: timeText(s?.renewTime),
      acquireTime: timeText(s?.acquireTime),
      preferredHolder: s?.preferredHolder ?? null,
      strategy: s?.strategy ?? null,
    },
  };
}

/** The client types MicroTime as a Date but hands back the wire string; accept either. */
function timeText(value: unknown): string | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  return typeof value === "string" ? value : null;
}

function withoutNulls<T extends object>(obj: T): { [K in keyof T]: Exclude<T[K], null> } {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== null)) as {
    [K in keyof T]: Exclude<T[K], null>;
  };
}

/** Per-call options that hand our AbortSignal to the client's fetch, so a hung call can be abandoned. */
export function withSignal(signal: AbortSignal): ConfigurationOptions {
  const middleware: ObservableMiddleware = {
    pre: (ctx) => {
      ctx.setSignal(signal);
      return new Observable(Promise.resolve(ctx));
    },
    post: (ctx) => new Observable(Promise.resolve(ctx)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: "append" };
}

export interface K8sConnectSettings {
  namespace: string;
  name: string;
  kubeconfig?: string | null;
}

/** In-cluster service-account config when `kubeconfig` is null, else that kubeconfig file. */
export function connectLeaseApi(
  settings: K8sConnectSettings,
  env: NodeJS.ProcessEnv = process.env,
): LeaseApi {
  return leaseApiFor(kubeConfigFor(settings, env), settings.namespace, settings.name);
}

/** The KubeConfig `connectLeaseApi` uses, for callers that reach several Leases (sharding). */
export function kubeConfigFor(
  settings: Omit<K8sConnectSettings, "name">,
  env: NodeJS.ProcessEnv = process.env,
): KubeConfig {
  const kc = new KubeConfig();
  if (settings.kubeconfig) {
    try {
      kc.loadFromFile(settings.kubeconfig);
    } catch (err) {
      throw new ConfigError(
        `cannot load coordinate.k8s_lease.kubeconfig ${settings.kubeconfig}: ${describeError(err)}; ` +
          `point it at a readable kubeconfig, or set it to null when running inside the cluster`,
      );
    }
  } else {
    if (!env.KUBERNETES_SERVICE_HOST) {
      throw new ConfigError(
        "coordinate.k8s_lease.kubeconfig is null but this process is not in a Kubernetes pod " +
          "(KUBERNETES_SERVICE_HOST is unset); set kubeconfig to a kubeconfig file for out-of-cluster use",
      );
    }
    kc.loadFromCluster();
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new ConfigError(
      `the kubeconfig for coordinate.k8s_lease has no current cluster; set its current-context`,
    );
  }
  // The API server through the environment's proxy (as client-go goes), unless the kubeconfig names
  // its own proxy-url; the client then tunnels with the cluster's CA and client certificate.
  const proxy = cluster.proxyUrl ? undefined : proxyFor(cluster.server);
  if (proxy) {
    kc.clusters = kc.clusters.map((c) => (c === cluster ? { ...c, proxyUrl: proxy.href } : c));
  }
  return kc;
}
