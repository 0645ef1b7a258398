import { Type } from '@sinclair/typebox';
import { findAccountSetting, putAccountSetting } from '../../db/accounts';
import { BILLING_SETTINGS_KEY, parseBillingSettings, type BillingSettings } from '../../lib/billing/dunning';
import { ApiError } from '../errors';
import { defineRoute } from '../route';
import { BillingSettingsSchema, serializeBillingSettings } from '../../resources/billing-settings';
import { Obj } from '../../resources/schemas';

const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

export const MAX_RETRIES = 8;

/** The account's dunning settings (docs/billing.md#dunning): an account setting, the defaults until set. */
export const billingSettingsRoutes = [
  defineRoute({
    method: 'get',
    path: '/accounts/:id/settings/billing',
    tag: 'Accounts',
    summary: 'Get the account\'s dunning settings (the defaults, days 1, 3, 5 and 7 then UNPAID, until set)',
    permission: 'account:read',
    message: 'Billing settings retrieved',
    params: Params,
    response: BillingSettingsSchema,
    async handler({ params, access, deps }) {
      const { account } = await access.forResource(params.id, 'account');
      const stored = await findAccountSetting(deps.db, account.id, BILLING_SETTINGS_KEY);
      return { data: serializeBillingSettings(account.id, parseBillingSettings(stored?.value)) };
    },
  }),

  defineRoute({
    method: 'put',
    path: '/accounts/:id/settings/billing',
    tag: 'Accounts',
    summary: 'Set when a failed renewal is retried (days after the first failure) and what the subscription becomes when the retries run out',
    // OWNER and ADMIN only, as every account setting: it decides whether customers are charged again.
    permission: 'account:settings:write',
    message: 'Billing settings saved',
    params: Params,
    body: Obj({
      retry_days: Type.Array(Type.Integer({ minimum: 1, maximum: 60 }), {
        maxItems: MAX_RETRIES, description: 'days after the first failure each retry is made at, strictly ascending; [] retries never',
      }),
      when_exhausted: Type.Union([Type.Literal('UNPAID'), Type.Literal('CANCELED')]),
    }),
    response: BillingSettingsSchema,
    async handler({ params, body, access, deps }) {
      const { account } = await access.forResource(params.id, 'account');
      const unordered = body.retry_days.findIndex((day, i) => i > 0 && day <= body.retry_days[i - 1]);
      if (unordered !== -1) {
        throw ApiError.validation([{ path: `body/retry_days/${unordered}`, message: `must be after the retry before it (day ${body.retry_days[unordered - 1]}): the days are strictly ascending` }]);
      }
      const settings: BillingSettings = { retry_days: body.retry_days, when_exhausted: body.when_exhausted };
      await putAccountSetting(deps.db, account.id, BILLING_SETTINGS_KEY, JSON.stringify(settings));
      return { data: serializeBillingSettings(account.id, settings) };
    },
  }),
];
