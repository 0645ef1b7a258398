import { createServer } from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import { createDb } from '../db/knex';

/**
 * The read baseline: a minimal Koa route on the same Postgres pool settings doing the same primary-key
 * select as GET /v1/payments/:id — no auth, no envelope, no logging.
 */
async function main(): Promise<void> {
  const db = createDb(process.env.DATABASE_URL!, { max: 20 });
  const router = new Router();
  router.get('/payments/:id', async (ctx) => {
    // The bench's merchant is a production account: its payments live in schema `live`.
    ctx.body = await db('live.payments').where({ id: ctx.params.id }).first();
  });
  const app = new Koa();
  app.use(router.routes());
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.PORT), () => console.log('baseline listening'));
  process.once('SIGTERM', () => server.close(() => void db.destroy().then(() => process.exit(0))));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
