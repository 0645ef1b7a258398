import { ApplicationFailure, type Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { classifyError, dataErrorFacts, PERMANENT_DATA_ERROR } from '../lib/data-errors';
import { logger } from '../lib/logger';

/**
 * Every activity's failure, classified once here instead of at each call (docs/operators.md#needs-attention):
 * an error Postgres will refuse on every attempt (a constraint, a value, a missing row) ends the activity
 * as a non-retryable `permanent_data_error`, which its workflow turns into a state an operator sees;
 * everything else is left as thrown, for the caller's retry policy (transient errors retry with backoff).
 * The failure carries only SQLSTATE and object names: pg's detail and knex's message hold values.
 */
export const permanentDataErrors: ActivityInterceptorsFactory = (ctx: Context) => ({
  inbound: {
    async execute(input, next) {
      try {
        return await next(input);
      } catch (err) {
        const facts = classifyError(err) === 'permanent' ? dataErrorFacts(err) : undefined;
        if (!facts) throw err;
        const { activityType, workflowExecution, attempt } = ctx.info;
        logger.error({ activity: activityType, workflow_id: workflowExecution?.workflowId, attempt, ...facts }, 'activity stopped: permanent data error');
        throw ApplicationFailure.create({ type: PERMANENT_DATA_ERROR, message: facts.message, details: [facts], nonRetryable: true });
      }
    },
  },
});
