import pino from 'pino';

/**
 * Structured JSON logs. Anything that could carry a secret is redacted by path as a second line of
 * defence; the first is never logging request bodies or credentials at all.
 */
export const logger = pino({
  level: process.env.LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'silent' : 'info'),
  base: { service: process.env.SB_PROCESS ?? 'switchboard' },
  timestamp: pino.stdTimeFunctions.isoTime,
  redact: {
    paths: [
      'req.headers.authorization', 'headers.authorization', '*.card', '*.number', '*.cvc', '*.credentials',
      '*.secret', '*.key', '*.password',
    ],
    censor: '[redacted]',
  },
});

export type Logger = typeof logger;

/**
 * The API's one line per request: written by the same logger without its redaction pass. The line has a
 * fixed shape of ids, method, path, status and timing, all top-level and none a redacted name, so
 * redaction would never change it; it only cost a walk of the object on every request. It follows the
 * logger's level, which can change at run time.
 */
const unredacted = logger.child({}, { redact: [] });

export function logRequest(line: Record<string, unknown>): void {
  if (unredacted.level !== logger.level) unredacted.level = logger.level;
  unredacted.info(line, 'request');
}
