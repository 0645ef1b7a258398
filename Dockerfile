# syntax=docker/dockerfile:1
# One image for every Switchboard process: `api` (default), `worker`, `simulator`, `migrate`
# (see docker/entrypoint.sh). Build: docker build -t switchboard .

# 1. Build: TypeScript to dist/, the pre-built workflow bundle dist/workflow-bundle.js, the dashboard.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-fund --no-audit
COPY . .
RUN npm run build

# 2. Production dependencies only.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-fund --no-audit && npm cache clean --force

# 3. Runtime: compiled code, the workflow bundle and production node_modules, as a non-root user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/dashboard/dist ./dashboard/dist
COPY --chown=node:node package.json ./
COPY --chmod=755 docker/entrypoint.sh /usr/local/bin/switchboard
USER node
EXPOSE 3000 4010
ENTRYPOINT ["switchboard"]
CMD ["api"]
