# syntax=docker/dockerfile:1
# crm-sync: multi-stage image on Node 24 LTS. Not built on the machine that
# wrote it (no Docker engine there); see docs/OPERATIONS.md.

# --- build: full dependencies, compile TypeScript, then drop dev dependencies
FROM node:24-slim AS build
WORKDIR /app
ENV NODE_ENV=development
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund --loglevel=error

# --- runtime: compiled code, production dependencies, presets, example jobs
FROM node:24-slim AS runtime
ENV NODE_ENV=production \
    CRM_SYNC_JOBS_DIR=/app/jobs \
    CRM_SYNC_MAPPINGS_DIR=/app/config/mappings \
    OPS_PORT=9464
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./package.json
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
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
