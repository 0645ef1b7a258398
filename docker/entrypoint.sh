#!/bin/sh
# One image, one command per process: api | worker | simulator | migrate | healthcheck <role>.
set -e
case "$1" in
  api)         exec node dist/api/main.js ;;
  worker)      exec node dist/worker/main.js ;;
  simulator)   exec node dist/simulator/main.js ;;
  migrate)     exec node dist/scripts/migrate.js ;;
  healthcheck) shift; exec node dist/scripts/healthcheck.js "$@" ;;
  *)           exec "$@" ;;
esac
