import { parseArgs } from 'node:util';
import { loadConfig } from '../lib/config';
import { signDevToken } from '../lib/tokens';

// npm run token -- --user usr_1 --workspace ws_1 [--system] [--ttl 3600]
const { values } = parseArgs({
  options: {
    user: { type: 'string', default: 'usr_demo' },
    workspace: { type: 'string', default: 'ws_demo' },
    system: { type: 'boolean', default: false },
    ttl: { type: 'string', default: '3600' },
  },
});
const ttl = Number(values.ttl);
if (!Number.isInteger(ttl) || ttl <= 0) {
  console.error('--ttl must be a positive number of seconds');
  process.exit(2);
}
console.log(signDevToken(loadConfig(), { user: values.user!, workspace: values.workspace!, system: values.system, ttlSeconds: ttl }));
