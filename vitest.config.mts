import { defineConfig } from 'vitest/config';

// The suite runs against a real Postgres and a real Temporal dev server, both brought up once in the
// global setup. SB_NO_STACK=1 skips that for quick runs of the pure unit tests (test/unit).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: process.env.SB_NO_STACK ? [] : ['test/setup/global.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', ['json', { outputFile: 'test/.tmp/results.json' }]],
  },
});
