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
