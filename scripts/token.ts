import { parseArgs } from 'node:util';
import { exitOnConfigError } from '../lib/config';
import { loadConfig } from '../db/local-state';
import { signDevToken } from '../lib/tokens';

// npm run token -- --user usr_1 --workspace ws_1 [--system | --platform] [--ttl 3600]
// A user token is signed with JWT_SECRET; --system signs a system-actor token with SYSTEM_JWT_SECRET;
// --platform a system token naming no workspace (the only one that registers payment providers).
const { values } = parseArgs({
  options: {
    user: { type: 'string', default: 'usr_demo' },
    workspace: { type: 'string', default: 'ws_demo' },
    system: { type: 'boolean', default: false },
    platform: { type: 'boolean', default: false },
    ttl: { type: 'string', default: '3600' },
  },
});
const ttl = Number(values.ttl);
if (!Number.isInteger(ttl) || ttl <= 0) {
  console.error('--ttl must be a positive number of seconds');
  process.exit(2);
}
try {
  const workspace = values.platform ? undefined : values.workspace;
  console.log(signDevToken(loadConfig(), { user: values.user!, workspace, system: values.system || values.platform, ttlSeconds: ttl }));
} catch (err) {
  exitOnConfigError(err, 'token');
  console.error(`token: ${(err as Error).message}`);
  process.exit(1);
}
