import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'test/.tmp/**', 'dashboard/dist/**', 'docs/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests poke at answers of any shape (supertest bodies, raw rows); the code they test has no any.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The dashboard is browser code with its own compiler options (DOM, JSX for Preact).
    files: ['dashboard/**/*.ts', 'dashboard/**/*.tsx', 'dashboard/**/*.mts'],
    languageOptions: { parserOptions: { project: './dashboard/tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no I/O libraries.
    // Command clients (client.ts) run on the client side: they connect to Temporal, so they are exempt.
    files: ['workflows/**/*.ts', 'contracts/**/*.ts'],
    ignores: ['workflows/client.ts', 'workflows/**/client.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [
          { group: ['node:*', 'fs', 'path', 'crypto', 'http', 'https', 'net', 'os', 'child_process', 'util', 'stream'], message: 'No Node built-ins in workflow code.' },
          { group: ['knex', 'pg', 'undici', 'pino', 'koa', '@temporalio/client', '@temporalio/worker', '@temporalio/activity', '**/db', '**/db/**', '**/api/**', '**/worker/**', '**/scripts/**'], message: 'Workflows never do I/O: call an activity.' },
          { group: ['**/client', '**/client.ts'], message: 'Command clients are client-side code: workflow code never imports one.' },
          // Not even their types: a workflow proxies the activity interface its contract declares.
          { group: ['**/activities', '**/activities/**'], message: "Workflows never import activities: proxy the contract's activity interface." },
        ],
      }],
    },
  },
);
