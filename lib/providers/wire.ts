// Reading what came over the wire from a processor, for the adapters that do their own HTTP (sandbox, adyen).

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A response body: JSON when it parses, else the text as is (an HTML error page, a proxy's message). */
export function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The system or undici code of a failed request (ECONNREFUSED, UND_ERR_CONNECT_TIMEOUT, …), on the error or its cause. */
export function errorCode(err: unknown): string | undefined {
  const seen = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = seen?.code ?? seen?.cause?.code;
  return typeof code === 'string' ? code : undefined;
}
