import { describe } from 'vitest';
import { useOperatorStack } from './support';
import { dashboardCases } from './dashboard.cases';
import { opsCliCases } from './ops-cli.cases';
import { temporalCases } from './temporal.cases';

// The operator cases share one simulator, API and worker (see useOperatorStack).
const operators = useOperatorStack();

describe('dashboard', () => dashboardCases(operators));
describe('ops CLI', () => opsCliCases(operators));
describe('Temporal UI and the stuck-payment watchdog', () => temporalCases(operators));
