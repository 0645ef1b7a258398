import { createServer } from 'node:http';

/**
 * The checkout page's floor (bench/checkout.ts): a bare node:http server answering every request with
 * the bytes and headers of a real hosted page, captured from the API (CHECKOUT_FLOOR_HTML). No Koa, no
 * Postgres, no logging: what serving that page costs with nothing of ours in the way.
 */
function main(): void {
  const html = Buffer.from(process.env.CHECKOUT_FLOOR_HTML ?? '', 'utf8');
  const headers = JSON.parse(process.env.CHECKOUT_FLOOR_HEADERS ?? '{}') as Record<string, string>;
  const server = createServer((_req, res) => {
    res.writeHead(200, { ...headers, 'content-length': html.length });
    res.end(html);
  });
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.PORT), () => console.log('checkout floor listening'));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}

main();
