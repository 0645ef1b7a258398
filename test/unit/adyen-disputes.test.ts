import { describe, expect, it } from 'vitest';
import { parseAdyenWebhook } from '../../activities/providers/adyen';
import { defenseFor } from '../../activities/providers/adyen/disputes';
import { defenseDocumentPdf } from '../../activities/providers/adyen/defense-document';
import { notificationBody, signItem } from '../doubles/adyen/server';

// Adyen's dispute notifications as DisputeNotices (lib/providers/adyen/notifications.ts), the choice of a
// defense reason, and the evidence document. Pure: no Postgres, no Temporal.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const credentials = { api_key: 'AQE_unit_test_key_0001', merchant_account: 'SwitchboardECOM', hmac_key: HMAC_KEY };

function item(eventCode: string, additionalData: Record<string, string> = {}, fields: Record<string, unknown> = {}) {
  return signItem({
    additionalData, amount: { currency: 'EUR', value: 1000 }, eventCode, eventDate: '2026-01-01T01:00:00+01:00', merchantAccountCode: 'SwitchboardECOM',
    merchantReference: 'ch_01JCHARGE0000000000000000', originalReference: '9913140798220028', paymentMethod: 'visa', pspReference: 'QFQTPCQ8HXSKGK82',
    reason: '', success: 'true', ...fields,
  }, HMAC_KEY);
}

function eventOf(eventCode: string, additionalData: Record<string, string> = {}, fields: Record<string, unknown> = {}) {
  const verdict = parseAdyenWebhook({ rawBody: JSON.stringify(notificationBody([item(eventCode, additionalData, fields)])), headers: {}, credentials });
  if (!verdict.verified) throw new Error(verdict.error);
  return verdict.events[0];
}

const chargeback = { chargebackReasonCode: ' 10.4', chargebackSchemeCode: 'visa', defensePeriodEndsAt: '2026-01-08T03:03:07+02:00', defendable: 'true' };

describe('Adyen dispute notifications', () => {
  it('NOTIFICATION_OF_CHARGEBACK opens a dispute that needs a response, due at defensePeriodEndsAt', () => {
    const event = eventOf('NOTIFICATION_OF_CHARGEBACK', chargeback);
    expect(event.operation).toBeUndefined();
    expect(event.outcome).toBeUndefined();
    expect(event).toMatchObject({ type: 'NOTIFICATION_OF_CHARGEBACK', eventId: 'NOTIFICATION_OF_CHARGEBACK:QFQTPCQ8HXSKGK82:true', chargeId: 'ch_01JCHARGE0000000000000000', providerReference: '9913140798220028' });
    expect(event.dispute).toEqual({
      processorDisputeId: 'QFQTPCQ8HXSKGK82', providerReference: '9913140798220028', chargeId: 'ch_01JCHARGE0000000000000000', status: 'NEEDS_RESPONSE',
      reason: 'fraudulent', processorReason: '10.4', amount: 1000, currency: 'EUR', evidenceDueBy: '2026-01-08T01:03:07.000Z', isInquiry: false,
      occurredAt: '2026-01-01T00:00:00.000Z',
    });
  });

  it('CHARGEBACK withdraws the money (Adyen names no fee)', () => {
    expect(eventOf('CHARGEBACK', chargeback).dispute).toMatchObject({ status: 'NEEDS_RESPONSE', funds: { kind: 'withdrawn', amount: 1000, fee: 0, currency: 'EUR' } });
    expect(eventOf('CHARGEBACK', { ...chargeback, autoDefended: 'true' }).dispute?.status).toBe('UNDER_REVIEW');
  });

  it('REQUEST_FOR_INFORMATION is an inquiry', () => {
    const { dispute } = eventOf('REQUEST_FOR_INFORMATION', { rfiReasonCode: '33', rfiSchemeCode: 'visa' });
    expect(dispute).toMatchObject({ status: 'WARNING_NEEDS_RESPONSE', isInquiry: true, reason: 'fraudulent', processorReason: '33' });
    expect(dispute?.funds).toBeUndefined();
  });

  it.each([
    ['CHARGEBACK_REVERSED', chargeback, 'WON', 'reinstated'],
    ['SECOND_CHARGEBACK', { chargebackReasonCode: '4853' }, 'LOST', 'withdrawn'],
    ['PREARBITRATION_WON', {}, 'WON', undefined],
    ['PREARBITRATION_LOST', {}, 'LOST', undefined],
    ['INFORMATION_SUPPLIED', { chargebackReasonCode: '13.3', disputeStatus: 'Pending' }, 'UNDER_REVIEW', undefined],
    ['INFORMATION_SUPPLIED', { rfiReasonCode: '33' }, 'WARNING_UNDER_REVIEW', undefined],
    ['ISSUER_RESPONSE_TIMEFRAME_EXPIRED', { chargebackReasonCode: '13.1', disputeStatus: 'Won' }, 'WON', undefined],
    ['ISSUER_RESPONSE_TIMEFRAME_EXPIRED', { rfiReasonCode: '33' }, 'WARNING_CLOSED', undefined],
    ['DISPUTE_DEFENSE_PERIOD_ENDED', { chargebackReasonCode: '10.4', disputeStatus: 'Accepted' }, 'LOST', undefined],
    ['DISPUTE_DEFENSE_PERIOD_ENDED', { chargebackReasonCode: '10.4', disputeStatus: 'Expired' }, 'LOST', undefined],
  ] as const)('%s (%j) → %s', (eventCode, data, status, funds) => {
    const { dispute } = eventOf(eventCode, data);
    expect(dispute?.status).toBe(status);
    expect(dispute?.funds?.kind).toBe(funds);
    expect(dispute?.processorDisputeId).toBe('QFQTPCQ8HXSKGK82');
  });

  it('maps the schemes\' reason codes, and any other to general', () => {
    const reasonOf = (code: string) => eventOf('CHARGEBACK', { chargebackReasonCode: code }).dispute?.reason;
    expect([reasonOf('4837'), reasonOf('13.1'), reasonOf('13.3'), reasonOf('12.6.1'), reasonOf('13.2'), reasonOf('13.6'), reasonOf('4863'), reasonOf('4853'), reasonOf('99.9')])
      .toEqual(['fraudulent', 'product_not_received', 'product_unacceptable', 'duplicate', 'subscription_canceled', 'credit_not_processed', 'unrecognized', 'general', 'general']);
  });

  it('names no charge when the merchantReference is not ours, and leaves other events alone', () => {
    const event = eventOf('CHARGEBACK_REVERSED', {}, { merchantReference: 'YOUR_MERCHANT_REFERENCE', originalReference: undefined });
    expect(event.chargeId).toBeUndefined();
    expect(event.dispute).toMatchObject({ processorDisputeId: 'QFQTPCQ8HXSKGK82', status: 'WON' });
    expect(event.dispute?.providerReference).toBeUndefined();
    expect(eventOf('NOTIFICATION_OF_FRAUD', { nofReasonCode: '6' }).dispute).toBeUndefined();
    expect(eventOf('CAPTURE').dispute).toBeUndefined();
    expect(eventOf('CHARGEBACK', chargeback, { success: 'false' }).dispute).toBeUndefined();
  });
});

describe('the Adyen defense', () => {
  const offered = [
    { defenseReasonCode: 'GoodsWereAsDescribed', defenseDocumentTypes: [{ defenseDocumentTypeCode: 'GoodsWereAsDescribed', requirementLevel: 'Required' }, { defenseDocumentTypeCode: 'TIDorInvoice', requirementLevel: 'Required' }] },
    { defenseReasonCode: 'SupplyDefenseMaterial', defenseDocumentTypes: [{ defenseDocumentTypeCode: 'TIDorInvoice', requirementLevel: 'Optional' }, { defenseDocumentTypeCode: 'DefenseMaterial', requirementLevel: 'Required' }] },
  ];
  it('picks the reason fitting ours, else the catch-all, with its required document types', () => {
    expect(defenseFor('product_unacceptable', offered)).toEqual({ code: 'GoodsWereAsDescribed', documentTypes: ['GoodsWereAsDescribed', 'TIDorInvoice'] });
    expect(defenseFor('fraudulent', offered)).toEqual({ code: 'SupplyDefenseMaterial', documentTypes: ['DefenseMaterial'] });
    expect(defenseFor('general', [])).toEqual({ code: 'SupplyDefenseMaterial', documentTypes: ['DefenseMaterial'] });
  });

  it('renders the evidence as a PDF that holds its text', () => {
    const pdf = defenseDocumentPdf({ customer_name: 'Zoë (Test)', uncategorized_text: `${'word '.repeat(40)}winning_evidence` }).toString('latin1');
    expect(pdf.startsWith('%PDF-1.4')).toBe(true);
    expect(pdf).toContain('winning_evidence');
    expect(pdf).toContain('(customer_name: Zo? \\(Test\\)) Tj');
    expect(pdf.trimEnd().endsWith('%%EOF')).toBe(true);
  });
});
