# syntax=docker/dockerfile:1
# sf2loki container image: a build stage compiles TypeScript and prunes dev dependencies; the runtime
# stage holds Node, dist/, proto/ and production node_modules only, and runs as uid/gid 10001.
# NODE_IMAGE is a build argument so scripts/image-test.sh can build offline on a local stand-in base.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# A TLS-inspecting proxy needs its CA for npm: pass it as the build secret `npm_ca`
# (--secret id=npm_ca,src=/etc/ssl/certs/ca-certificates.crt). It is mounted for this step only and
# never lands in a layer. --ignore-scripts: no dependency needs an install script (snappy ships
# prebuilt binaries as optional packages).
RUN --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="sf2loki" \
      org.opencontainers.image.description="Ships Salesforce Event Monitoring data into Grafana Loki, at-least-once." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# A fixed numeric user, so Kubernetes runAsNonRoot can verify it and volume ownership is predictable.
# Written to /etc/passwd directly: the base may be a minimal root file system without useradd.
RUN echo 'sf2loki:x:10001:10001:sf2loki:/nonexistent:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'sf2loki:x:10001:' >> /etc/group \
 && mkdir -p /var/lib/sf2loki /etc/sf2loki \
 && chown 10001:10001 /var/lib/sf2loki
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY bin ./bin
COPY proto ./proto
RUN ln -s /app/bin/sf2loki.js /usr/local/bin/sf2loki
# bin/sf2loki.js re-execs itself with the daemon's V8 flags (--max-semi-space-size=8
# --heap-growing-percent=50) and MALLOC_ARENA_MAX=1 (docs/capacity.md). Set SF2LOKI_V8_FLAGS=0, or either flag in NODE_OPTIONS,
# to run with your own.
ENV NODE_ENV=production
USER 10001:10001
# State lives on a volume; with a read-only root file system mount one at /tmp too.
VOLUME ["/var/lib/sf2loki"]
EXPOSE 8080
# /readyz is 503 on a healthy HA standby by design, so a standby shows as unhealthy here; in
# Kubernetes use the manifests' probes (liveness /healthz) instead. Assumes the default health_addr.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["sf2loki"]
CMD ["--config", "/etc/sf2loki/config.yaml"]
