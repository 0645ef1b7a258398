#!/bin/sh
# One image, one command per process: api | worker | simulator | migrate | healthcheck <role>.
set -e
case "$1" in
  api)         exec node dist/api/main.js ;;
  # The main thread's heap limit (WORKER_HEAP_MB, default 256; 0 = V8's default) is a start flag.
  worker)      if [ "${WORKER_HEAP_MB:-256}" = 0 ]; then exec node dist/worker/main.js; else exec node --max-old-space-size="${WORKER_HEAP_MB:-256}" dist/worker/main.js; fi ;;
  simulator)   exec node dist/simulator/main.js ;;
  migrate)     exec node dist/scripts/migrate.js ;;
  healthcheck) shift; exec node dist/scripts/healthcheck.js "$@" ;;
  *)           exec "$@" ;;
esac
