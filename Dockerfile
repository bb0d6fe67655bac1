# Mediagate server image: build with dev dependencies, run the built JavaScript with plain node as a non-root user.
#   docker build -t mediagate .
#   docker run -p 3000:3000 -v mediagate-data:/data mediagate
# Settings: docs/configuration.md (DATABASE_URL for PostgreSQL; SQLite in /data otherwise).

FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 compiles from source when no prebuilt binary can be fetched
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY . .
RUN npm ci --no-audit --no-fund \
 && npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf packages/*/src packages/*/test packages/*/build examples/*/src examples/*/test examples/*/build \
           test bench scripts docs .ci .git

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    MEDIAGATE_DATA_DIR=/data \
    MEDIAGATE_LOG_FORMAT=json \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    NODE_OPTIONS="--max-old-space-size=256 --max-semi-space-size=16"
WORKDIR /app
COPY --from=build /app /app
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/readyz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "packages/node/dist/bin.js", "serve"]
