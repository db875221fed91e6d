# syntax=docker/dockerfile:1
# One image for every process of the load balancer; docker-compose.yml picks the command per service:
#   node apps/api/dist/main.js | apps/health-worker/dist/main.js | apps/l4-node/dist/main.js
#   | apps/l7-node/dist/main.js | scripts/demo-backend.mjs
# Configuration is the environment variables of ARCHITECTURE.md "Entry points".

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: full install (better-sqlite3 compiles natively), tsc build of every workspace, then prune ----
FROM ${NODE_IMAGE} AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
ENV CI=true TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1 NO_UPDATE_NOTIFIER=1 npm_config_fund=false npm_config_audit=false
WORKDIR /app

# Manifests first, so the dependency layer is cached until one of them changes.
COPY package.json package-lock.json ./
COPY packages/model/package.json packages/model/
COPY packages/db/package.json packages/db/
COPY packages/balancing/package.json packages/balancing/
COPY packages/health/package.json packages/health/
COPY packages/client/package.json packages/client/
COPY packages/metrics-kit/package.json packages/metrics-kit/
COPY packages/node-runtime/package.json packages/node-runtime/
COPY packages/cli/package.json packages/cli/
# Tests' shared helpers: a workspace npm ci must see, never built and not shipped below.
COPY packages/test-support/package.json packages/test-support/
COPY apps/api/package.json apps/api/
COPY apps/health-worker/package.json apps/health-worker/
COPY apps/l4-node/package.json apps/l4-node/
COPY apps/l7-node/package.json apps/l7-node/
COPY apps/console/package.json apps/console/
RUN npm ci

COPY . .
# Builds every workspace (turbo, tsc -b) into apps/*/dist and packages/*/dist.
RUN npm run build \
  && test -f apps/api/dist/main.js \
  && test -f apps/health-worker/dist/main.js \
  && test -f apps/l4-node/dist/main.js \
  && test -f apps/l7-node/dist/main.js \
  && test -f apps/console/dist/index.html
# Production dependencies only; the native better-sqlite3 binary built above stays (same base image below).
RUN npm prune --omit=dev

# ---- runtime: production node_modules, the built dist folders, the migrations; runs as the image's `node` user ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app

COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/packages/model/package.json packages/model/
COPY --from=build /app/packages/model/dist packages/model/dist
COPY --from=build /app/packages/db/package.json packages/db/
COPY --from=build /app/packages/db/dist packages/db/dist
COPY --from=build /app/packages/balancing/package.json packages/balancing/
COPY --from=build /app/packages/balancing/dist packages/balancing/dist
COPY --from=build /app/packages/health/package.json packages/health/
COPY --from=build /app/packages/health/dist packages/health/dist
COPY --from=build /app/packages/client/package.json packages/client/
COPY --from=build /app/packages/client/dist packages/client/dist
COPY --from=build /app/packages/metrics-kit/package.json packages/metrics-kit/
COPY --from=build /app/packages/metrics-kit/dist packages/metrics-kit/dist
COPY --from=build /app/packages/node-runtime/package.json packages/node-runtime/
COPY --from=build /app/packages/node-runtime/dist packages/node-runtime/dist
# The slb CLI, for `docker compose exec api node packages/cli/dist/bin.js …`.
COPY --from=build /app/packages/cli/package.json packages/cli/
COPY --from=build /app/packages/cli/dist packages/cli/dist
COPY --from=build /app/packages/cli/schema packages/cli/schema
COPY --from=build /app/apps/api/package.json apps/api/
COPY --from=build /app/apps/api/dist apps/api/dist
COPY --from=build /app/apps/health-worker/package.json apps/health-worker/
COPY --from=build /app/apps/health-worker/dist apps/health-worker/dist
COPY --from=build /app/apps/l4-node/package.json apps/l4-node/
COPY --from=build /app/apps/l4-node/dist apps/l4-node/dist
COPY --from=build /app/apps/l7-node/package.json apps/l7-node/
COPY --from=build /app/apps/l7-node/dist apps/l7-node/dist
# The web console, a static build the API serves at /console (apps/api/dist/plugins/console.js finds it here).
COPY --from=build /app/apps/console/package.json apps/console/
COPY --from=build /app/apps/console/dist apps/console/dist
# packages/db/dist finds its migrations at ../../../migrations, i.e. /app/migrations.
COPY --from=build /app/migrations migrations
# packages/db/dist/pg finds PostgreSQL's at ../../../../migrations-pg (the db:copy command, issue 23).
COPY --from=build /app/migrations-pg migrations-pg
COPY --from=build /app/scripts/demo-backend.mjs scripts/

# The code stays root-owned and read-only to the process; state (SQLite, node snapshots) goes to /data.
RUN mkdir -p /data && chown node:node /data
USER node
ENV SLB_DB_PATH=/data/slb.db

EXPOSE 8080 8053/tcp 8053/udp
CMD ["node", "apps/api/dist/main.js"]
