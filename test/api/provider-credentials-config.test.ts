import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../lib/config';
import { apiBaseHostErrors, hostMatches } from '../../lib/providers/api-base';
import { ADYEN_LIVE_API_HOSTS } from '../../lib/providers/adyen/credentials';
import { sandboxAdapterErrors } from '../../lib/providers/sandbox/credentials';
import { STRIPE_API_HOSTS } from '../../lib/providers/stripe/credentials';

// PROVIDER_API_BASE_EXTRA_HOSTS and the processors' own hosts (docs/security.md §15). Pure: runs with SB_NO_STACK=1.

const key = () => randomBytes(32).toString('base64');
const local = { dataDir: '/tmp/sb-provider-hosts', devSecrets: { jwtSecret: 'j'.repeat(40), systemJwtSecret: 's'.repeat(40), vaultKey: key(), apiKeyPepper: 'p'.repeat(40) } };
const production = (extra: NodeJS.ProcessEnv) => ({
  NODE_ENV: 'production', JWT_SECRET: randomBytes(48).toString('base64'), SYSTEM_JWT_SECRET: randomBytes(48).toString('base64'),
  VAULT_KEY: key(), API_KEY_PEPPER: randomBytes(48).toString('base64'), METRICS_TOKEN: randomBytes(48).toString('base64'), ...extra,
});

describe('PROVIDER_API_BASE_EXTRA_HOSTS', () => {
  it('is a comma list of host or host:port, empty by default', () => {
    expect(parseConfig({}, local).providerApiBaseExtraHosts).toEqual([]);
    expect(parseConfig({ PROVIDER_API_BASE_EXTRA_HOSTS: ' Proxy.Internal:8443 ,127.0.0.1,[::1]:9000,egress.example.com:443' }, local).providerApiBaseExtraHosts)
      .toEqual([{ host: 'proxy.internal', port: 8443 }, { host: '127.0.0.1' }, { host: '[::1]', port: 9000 }, { host: 'egress.example.com', port: 443 }]);
    for (const bad of ['https://proxy.internal', 'proxy.internal/path', 'user@proxy.internal', 'proxy.internal:99999']) {
      expect(() => parseConfig({ PROVIDER_API_BASE_EXTRA_HOSTS: bad }, local), bad).toThrow(ConfigError);
    }
  });

  it('refuses a loopback host in production (a local double), and takes an egress proxy', () => {
    for (const loopback of ['127.0.0.1', 'localhost:12111', '[::1]', '127.0.0.2']) {
      expect(() => parseConfig(production({ PROVIDER_API_BASE_EXTRA_HOSTS: `egress.example.com,${loopback}` }), local), loopback)
        .toThrow(/may not name a loopback host in production/);
    }
    expect(parseConfig(production({ PROVIDER_API_BASE_EXTRA_HOSTS: 'egress.example.com:8443' }), local).providerApiBaseExtraHosts)
      .toEqual([{ host: 'egress.example.com', port: 8443 }]);
  });
});

describe('the processors\' own hosts', () => {
  it('match exactly, or one DNS label before a `*` suffix', () => {
    expect(hostMatches('api.stripe.com', 'api.stripe.com')).toBe(true);
    expect(hostMatches('api.stripe.com', 'api.stripe.com.evil.example')).toBe(false);
    const [adyenLive] = ADYEN_LIVE_API_HOSTS;
    expect(hostMatches(adyenLive, '1797a841fbb37ca7-shopcompany-checkout-live.adyenpayments.com')).toBe(true);
    for (const host of ['checkout-live.adyenpayments.com', '-checkout-live.adyenpayments.com', 'a.b-checkout-live.adyenpayments.com', 'x-checkout-live.adyenpayments.com.evil.example']) {
      expect(hostMatches(adyenLive, host), host).toBe(false);
    }
  });

  it('take their https port only; listed extra hosts any port unless they name one', () => {
    const errors = (apiBase: string, extra = [] as { host: string; port?: number }[]) => apiBaseHostErrors({ api_base: apiBase }, STRIPE_API_HOSTS, extra, 'body/config');
    expect(errors('https://api.stripe.com')).toEqual([]);
    expect(errors('https://api.stripe.com:443')).toEqual([]);
    expect(errors('https://api.stripe.com:8443').map((e) => e.path)).toEqual(['body/config/api_base']);
    expect(errors('https://proxy.internal:9000', [{ host: 'proxy.internal' }])).toEqual([]);
    expect(errors('https://proxy.internal:9000', [{ host: 'proxy.internal', port: 8443 }])).toHaveLength(1);
    expect(apiBaseHostErrors({}, STRIPE_API_HOSTS, [], 'body/config')).toEqual([]);
  });
});

describe('the sandbox processor', () => {
  it('is registered live only outside production: in production it serves the sandbox environment', () => {
    expect(sandboxAdapterErrors(false, true)).toEqual([{ path: 'body/identifier', message: expect.stringContaining('sandbox_mode=true only') }]);
    expect(sandboxAdapterErrors(true, true)).toEqual([]);
    expect(sandboxAdapterErrors(false, false)).toEqual([]);
  });
});
