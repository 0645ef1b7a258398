/**
 * Which failures of an activity a retry can cure (docs/operators.md#needs-attention). Activities retry
 * with backoff for as long as it takes, which is right while the database is away and wrong when
 * Postgres refuses the data itself: the same write is refused on every attempt. Pure, so the worker's
 * activity interceptor classifies with it and workflows read the failure it produces.
 */

/** The `type` of the non-retryable failure an activity ends with when Postgres refuses its data for good. */
export const PERMANENT_DATA_ERROR = 'permanent_data_error';

/** What a retry can do about an error: cure it, never cure it, or nobody can tell (retried, as before). */
export type ErrorClass = 'transient' | 'permanent' | 'unknown';

/**
 * A row the activity's workflow wrote earlier (its payment, its charge) is gone: it will not appear on
 * a retry, so the activity stops. Thrown by activities where they find that out.
 */
export class MissingRowError extends Error {
  constructor(readonly table: string, readonly id: string) {
    super(`${table} ${id} is missing`);
    this.name = 'MissingRowError';
  }
}

/** SQLSTATE classes of data Postgres refuses whatever the attempt: data exception, integrity constraint, syntax or undefined object. */
const PERMANENT_CLASSES = new Set(['22', '23', '42']);
/** Connection exceptions and insufficient resources: the server or its connections, not the data. */
const TRANSIENT_CLASSES = new Set(['08', '53']);
/** Serialization failure, deadlock, lock timeout, statement canceled, admin or crash shutdown, cannot connect now. */
const TRANSIENT_STATES = new Set(['40001', '40P01', '55P03', '57014', '57P01', '57P02', '57P03']);
/** The socket's errors (node's `code`s) while reaching or talking to Postgres. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);
/** What pg and knex say (without a code) when a connection dies or the pool has none to give. */
const TRANSIENT_MESSAGES = [
  /Connection terminated/i, /timeout exceeded when trying to connect/i, /Client has encountered a connection error/i,
  /Timeout acquiring a connection/i, /Connection ended/i,
];

/** Names of the SQLSTATEs operators meet most (the rest are named by their class). */
const CONDITIONS: Record<string, string> = {
  '23502': 'not_null_violation', '23503': 'foreign_key_violation', '23505': 'unique_violation', '23514': 'check_violation',
  '23P01': 'exclusion_violation', '22001': 'string_data_right_truncation', '22003': 'numeric_value_out_of_range',
  '22007': 'invalid_datetime_format', '22P02': 'invalid_text_representation', '42P01': 'undefined_table', '42703': 'undefined_column',
};
const CLASS_NAMES: Record<string, string> = {
  '22': 'data_exception', '23': 'integrity_constraint_violation', '42': 'syntax_error_or_access_rule_violation',
};

interface ErrorFields {
  name?: unknown; message?: unknown; code?: unknown; severity?: unknown; cause?: unknown;
  table?: unknown; column?: unknown; constraint?: unknown;
}

/** The error and its causes, outermost first (an error wrapped by the code that met it keeps its cause). */
function chain(err: unknown): ErrorFields[] {
  const found: ErrorFields[] = [];
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 6; depth += 1) {
    found.push(e as ErrorFields);
    e = (e as ErrorFields).cause;
  }
  return found;
}

/** An error Postgres sent (pg's DatabaseError): a five-character SQLSTATE and a severity. */
function isServerError(e: ErrorFields): e is ErrorFields & { code: string } {
  return typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) && typeof e.severity === 'string';
}

function classOne(e: ErrorFields): ErrorClass {
  if (e.name === 'MissingRowError') return 'permanent';
  if (e.name === 'KnexTimeoutError') return 'transient';
  if (isServerError(e)) {
    if (TRANSIENT_STATES.has(e.code) || TRANSIENT_CLASSES.has(e.code.slice(0, 2))) return 'transient';
    if (PERMANENT_CLASSES.has(e.code.slice(0, 2))) return 'permanent';
    return 'unknown';
  }
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return 'transient';
  if (typeof e.message === 'string' && TRANSIENT_MESSAGES.some((m) => m.test(e.message as string))) return 'transient';
  return 'unknown';
}

/** Whether retrying the activity that threw `err` can help: the first error in its cause chain that tells. */
export function classifyError(err: unknown): ErrorClass {
  for (const e of chain(err)) {
    const found = classOne(e);
    if (found !== 'unknown') return found;
  }
  return 'unknown';
}

/**
 * What a permanent data error says, safe for workflow history and logs: the SQLSTATE and the names of
 * the table, column and constraint, never the values (pg's `detail` and knex's message hold those).
 */
export interface DataErrorFacts {
  message: string;
  sqlstate?: string;
  condition?: string;
  table?: string;
  column?: string;
  constraint?: string;
  /** For a missing row: which one. */
  missing?: { table: string; id: string };
}

const str = (value: unknown) => (typeof value === 'string' && value ? value : undefined);

/** The facts of a permanent error (classifyError said so); undefined for any other error. */
export function dataErrorFacts(err: unknown): DataErrorFacts | undefined {
  for (const e of chain(err)) {
    if (classOne(e) !== 'permanent') continue;
    if (e.name === 'MissingRowError') {
      const missing = e as unknown as MissingRowError;
      return { message: missing.message, missing: { table: missing.table, id: missing.id } };
    }
    if (!isServerError(e)) continue;
    const condition = CONDITIONS[e.code] ?? CLASS_NAMES[e.code.slice(0, 2)];
    const table = str(e.table);
    const constraint = str(e.constraint);
    const column = str(e.column);
    const on = [table && `table ${table}`, column && `column ${column}`, constraint && `constraint ${constraint}`].filter(Boolean).join(', ');
    return {
      message: `Postgres refused the data: ${condition} (SQLSTATE ${e.code})${on ? ` on ${on}` : ''}.`,
      sqlstate: e.code, condition,
      ...(table ? { table } : {}), ...(column ? { column } : {}), ...(constraint ? { constraint } : {}),
    };
  }
  return undefined;
}

/** A failure as workflow code sees it (an ActivityFailure, its cause an ApplicationFailure), read by shape. */
interface FailureFields { type?: unknown; message?: unknown; details?: unknown; cause?: unknown }

/** A permanent data failure as a workflow read it: its message and facts (SQLSTATE and names, no values). */
export interface PermanentDataFailure { message: string; facts?: DataErrorFacts }

/**
 * The permanent data failure an activity ended with, found in the chain of what the workflow caught
 * (undefined for any other failure). Workflows call it to tell "flag the payment and stop" from the rest.
 */
export function permanentDataFailure(err: unknown): PermanentDataFailure | undefined {
  for (const e of chain(err) as FailureFields[]) {
    if (e.type !== PERMANENT_DATA_ERROR) continue;
    const [facts] = Array.isArray(e.details) ? e.details as DataErrorFacts[] : [];
    return { message: typeof e.message === 'string' ? e.message : PERMANENT_DATA_ERROR, ...(facts ? { facts } : {}) };
  }
  return undefined;
}
