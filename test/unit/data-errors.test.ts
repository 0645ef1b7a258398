import { describe, expect, it } from 'vitest';
import { DatabaseError } from 'pg';
import { KnexTimeoutError } from 'knex';
import {
  classifyError, dataErrorFacts, MissingRowError, PERMANENT_DATA_ERROR, permanentDataFailure, type ErrorClass,
} from '../../lib/data-errors';

/** An error as pg hands it over from the server: a SQLSTATE, a severity, and the names Postgres gives. */
function pgError(code: string, fields: Partial<DatabaseError> = {}): DatabaseError {
  return Object.assign(new DatabaseError('insert into "live"."payments" ... - refused', 100, 'error'), { code, severity: 'ERROR', ...fields });
}

const networkError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });

describe('classifyError', () => {
  const cases: [string, unknown, ErrorClass][] = [
    ['check violation (23514)', pgError('23514'), 'permanent'],
    ['unique violation (23505)', pgError('23505'), 'permanent'],
    ['foreign key violation (23503)', pgError('23503'), 'permanent'],
    ['not null violation (23502)', pgError('23502'), 'permanent'],
    ['invalid text representation (22P02)', pgError('22P02'), 'permanent'],
    ['numeric value out of range (22003)', pgError('22003'), 'permanent'],
    ['undefined column (42703)', pgError('42703'), 'permanent'],
    ['syntax error (42601)', pgError('42601'), 'permanent'],
    ['a row the workflow wrote is gone', new MissingRowError('charge', 'ch_1'), 'permanent'],
    ['connection failure (08006)', pgError('08006'), 'transient'],
    ['cannot connect now (57P03)', pgError('57P03'), 'transient'],
    ['admin shutdown, pg_terminate_backend (57P01)', pgError('57P01'), 'transient'],
    ['crash shutdown (57P02)', pgError('57P02'), 'transient'],
    ['statement canceled (57014)', pgError('57014'), 'transient'],
    ['serialization failure (40001)', pgError('40001'), 'transient'],
    ['deadlock (40P01)', pgError('40P01'), 'transient'],
    ['lock timeout (55P03)', pgError('55P03'), 'transient'],
    ['too many connections (53300)', pgError('53300'), 'transient'],
    ['out of memory (53200)', pgError('53200'), 'transient'],
    ['connection refused', networkError('ECONNREFUSED'), 'transient'],
    ['connection reset', networkError('ECONNRESET'), 'transient'],
    ['socket timeout', networkError('ETIMEDOUT'), 'transient'],
    ['pg: the server closed the connection', new Error('Connection terminated unexpectedly'), 'transient'],
    ['pg: no connection within the connect timeout', new Error('timeout exceeded when trying to connect'), 'transient'],
    ['knex: no pooled connection in time', new KnexTimeoutError('Knex: Timeout acquiring a connection. The pool is probably full.'), 'transient'],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')"), 'unknown'],
    ['an internal error (XX000)', pgError('XX000'), 'unknown'],
    ['a provider failure', Object.assign(new Error('capture not confirmed'), { type: 'capture_pending' }), 'unknown'],
    ['a code that only looks like a SQLSTATE', Object.assign(new Error('x'), { code: '23514' }), 'unknown'],
    ['nothing', undefined, 'unknown'],
    ['a permanent error wrapped by the code that met it', new Error('writing the outcome failed', { cause: pgError('23514') }), 'permanent'],
    ['a transient error wrapped', new Error('writing the outcome failed', { cause: networkError('ECONNRESET') }), 'transient'],
  ];
  it.each(cases)('%s → %s', (_name, err, expected) => {
    expect(classifyError(err)).toBe(expected);
  });
});

describe('dataErrorFacts', () => {
  it('names the SQLSTATE, table, column and constraint, and none of the values', () => {
    const err = pgError('23514', {
      table: 'payments', constraint: 'payments_amount_check', schema: 'live',
      detail: 'Failing row contains (pay_1, 4242424242424242, ...)',
    });
    const facts = dataErrorFacts(err);
    expect(facts).toEqual({
      message: 'Postgres refused the data: check_violation (SQLSTATE 23514) on table payments, constraint payments_amount_check.',
      sqlstate: '23514', condition: 'check_violation', table: 'payments', constraint: 'payments_amount_check',
    });
    expect(JSON.stringify(facts)).not.toMatch(/4242|Failing|insert/);
  });

  it('names a class when the state has no name of its own', () => {
    expect(dataErrorFacts(pgError('22012'))?.condition).toBe('data_exception');
  });

  it('says which row is missing', () => {
    expect(dataErrorFacts(new MissingRowError('payment', 'pay_1'))).toEqual({ message: 'payment pay_1 is missing', missing: { table: 'payment', id: 'pay_1' } });
  });

  it('has nothing to say about an error a retry may cure', () => {
    expect(dataErrorFacts(pgError('40001'))).toBeUndefined();
    expect(dataErrorFacts(new Error('Connection terminated unexpectedly'))).toBeUndefined();
  });
});

describe('permanentDataFailure', () => {
  it('finds the failure in what a workflow catches (an activity failure caused by it)', () => {
    const facts = { message: 'refused', sqlstate: '23514' };
    const caught = { message: 'Activity task failed', cause: { type: PERMANENT_DATA_ERROR, message: 'refused', details: [facts] } };
    expect(permanentDataFailure(caught)).toEqual({ message: 'refused', facts });
  });

  it('finds none in other failures', () => {
    expect(permanentDataFailure({ message: 'Activity task failed', cause: { type: 'not_found', message: 'gone' } })).toBeUndefined();
    expect(permanentDataFailure(new Error('x'))).toBeUndefined();
  });
});
