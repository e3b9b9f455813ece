# syntax=docker/dockerfile:1
# crm-sync: multi-stage image on Node 24 LTS. Not built on the machine that
# wrote it (no Docker engine there); test/e2e/image-steps.test.ts replays the
# build and runtime stages' steps outside Docker; see docs/OPERATIONS.md.
#
# Stages: build (all dependencies, everything compiled), sandbox (the platform
# emulator, for the example setup only), prune (production dependencies only)
# and runtime, the default target: the product, without the sandbox.

# --- build: full dependencies, then compile the sandbox package and the app
FROM node:24-slim AS build
WORKDIR /app
ENV NODE_ENV=development
# npm ci needs the package.json of every workspace beside the lock file.
COPY package.json package-lock.json ./
COPY packages/platform-sandbox/package.json ./packages/platform-sandbox/
RUN npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.json tsconfig.build.json ./
COPY packages/platform-sandbox/tsconfig.json ./packages/platform-sandbox/
COPY packages/platform-sandbox/src ./packages/platform-sandbox/src
COPY src ./src
RUN npm run build

# --- sandbox: the platform emulator (a development tool) for docker-compose's
# example setup. It needs an API key: --api-key K or env SANDBOX_API_KEY.
FROM build AS sandbox
USER node
EXPOSE 4010
ENTRYPOINT ["node", "dist/cli.js", "sandbox"]
CMD ["--host", "0.0.0.0", "--port", "4010"]

# --- prune: drop dev dependencies. --workspaces=false makes npm treat the
# sandbox workspace as the devDependency it is (otherwise npm keeps every
# workspace), so the product has no copy of it.
FROM build AS prune
RUN npm prune --omit=dev --workspaces=false --no-audit --no-fund --loglevel=error

# --- runtime: compiled code, production dependencies, presets, example jobs
FROM node:24-slim AS runtime
ENV NODE_ENV=production \
    CRM_SYNC_JOBS_DIR=/app/jobs \
    CRM_SYNC_MAPPINGS_DIR=/app/config/mappings \
    OPS_PORT=9464
WORKDIR /app
COPY --from=prune --chown=node:node /app/package.json ./package.json
COPY --from=prune --chown=node:node /app/node_modules ./node_modules
COPY --from=prune --chown=node:node /app/dist ./dist
COPY --chown=node:node config ./config
COPY --chown=node:node jobs ./jobs
COPY --chown=node:node examples ./examples
# The official image's unprivileged user (uid 1000).
USER node
EXPOSE 9464
# node:24-slim has no curl: ask Node itself. OPS_PORT is the ops server's port.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.OPS_PORT || 9464) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM goes straight to node (exec form), which shuts down gracefully.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["start"]
