import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { DISPUTE_EVIDENCE_FIELDS, type DisputeEvidenceField } from '../../../lib/providers/disputes';
import type { Client, Dispute } from '../api';
import { type Action, Section } from '../components';
import { humanize } from '../format';

interface FieldSpec { field: DisputeEvidenceField; label: string; long?: boolean; hint?: string }

// Grouped the way a merchant gathers them; the fields are the API's (Stripe's names).
const GROUPS: { title: string; fields: FieldSpec[] }[] = [
  { title: 'Customer', fields: [
    { field: 'customer_name', label: 'Customer name' },
    { field: 'customer_email_address', label: 'Customer email' },
    { field: 'billing_address', label: 'Billing address', long: true },
  ] },
  { title: 'Product and shipping', fields: [
    { field: 'product_description', label: 'Product description', long: true, hint: 'What was sold, and how the customer received it.' },
    { field: 'shipping_address', label: 'Shipping address', long: true },
    { field: 'shipping_carrier', label: 'Carrier' },
    { field: 'shipping_tracking_number', label: 'Tracking number' },
    { field: 'shipping_date', label: 'Shipping date' },
  ] },
  { title: 'Service', fields: [
    { field: 'service_date', label: 'Service date' },
    { field: 'access_activity_log', label: 'Access activity log', long: true, hint: 'The customer\'s use of the service: logins, downloads, IP addresses.' },
  ] },
  { title: 'Policies', fields: [
    { field: 'refund_policy_disclosure', label: 'Refund policy disclosure', long: true },
    { field: 'refund_refusal_explanation', label: 'Why no refund was given', long: true },
    { field: 'cancellation_policy_disclosure', label: 'Cancellation policy disclosure', long: true },
    { field: 'cancellation_rebuttal', label: 'Cancellation rebuttal', long: true },
  ] },
  { title: 'Anything else', fields: [
    { field: 'duplicate_charge_explanation', label: 'Why the charge is not a duplicate', long: true },
    { field: 'uncategorized_text', label: 'Other information', long: true, hint: 'Anything else the card issuer should read.' },
  ] },
];

const savedOf = (d: Dispute) => Object.fromEntries(DISPUTE_EVIDENCE_FIELDS.map((f) => [f, d.evidence[f] ?? ''])) as Record<DisputeEvidenceField, string>;

/** The evidence as text fields, with Save, Submit and Accept; for a credential that may answer, while the dispute can be answered. */
export function EvidenceForm({ api, dispute: d, action, onDone }: { api: Client; dispute: Dispute; action: Action; onDone: () => void }) {
  const saved = savedOf(d);
  const [values, setValues] = useState(saved);
  const [confirming, setConfirming] = useState<'submit' | 'accept' | null>(null);
  const changed = Object.fromEntries(DISPUTE_EVIDENCE_FIELDS.filter((f) => values[f] !== saved[f]).map((f) => [f, values[f]]));
  const dirty = Object.keys(changed).length > 0;
  const hasAny = DISPUTE_EVIDENCE_FIELDS.some((f) => values[f].trim() !== '');

  // The form is remounted with the answered dispute (keyed by updated_at): reload only after a success, so a refused save keeps what was typed.
  const run = (work: () => Promise<string>) => action.run(async () => {
    const text = await work();
    setConfirming(null);
    onDone();
    return text;
  });
  const save = () => run(async () => { await api.saveDisputeEvidence(d.id, changed, false); return 'Evidence saved.'; });
  const submit = () => run(async () => {
    const after = await api.saveDisputeEvidence(d.id, changed, true);
    return `Evidence submitted: the dispute is ${humanize(after.status).toLowerCase()} while the processor decides.`;
  });
  const accept = () => run(async () => {
    const after = await api.acceptDispute(d.id);
    return `Accepted: the dispute is ${humanize(after.status).toLowerCase()}.`;
  });

  return (
    <Section title="Evidence" actions={<span class="muted small">{d.evidence_details.has_evidence ? 'Saved evidence is sent only when you submit.' : 'Nothing saved yet.'}</span>}>
      <form class="evidence-form" data-testid="evidence-form" onSubmit={(e) => { e.preventDefault(); if (dirty) void save(); }}>
        {GROUPS.map((g) => (
          <fieldset key={g.title} class="evidence-group">
            <legend>{g.title}</legend>
            <div class="evidence-grid">
              {g.fields.map(({ field, label, long, hint }) => {
                const id = `evidence-${field}`;
                const onInput = (e: Event) => setValues({ ...values, [field]: (e.currentTarget as HTMLInputElement).value });
                return (
                  <div key={field} class={`evidence-field ${long ? 'evidence-long' : ''}`}>
                    <label for={id}>{label}</label>
                    {long ? <textarea id={id} name={field} rows={2} value={values[field]} onInput={onInput} />
                      : <input id={id} name={field} value={values[field]} onInput={onInput} />}
                    {hint ? <div class="muted small">{hint}</div> : null}
                  </div>
                );
              })}
            </div>
          </fieldset>
        ))}
        {confirming ? (
          <div class={`callout ${confirming === 'accept' ? 'callout-red' : 'callout-amber'} evidence-confirm`} role="alertdialog" aria-label="Confirm">
            <span>{confirming === 'submit'
              ? 'Submitting sends this evidence to the processor. It is sent once: nothing can be added after.'
              : 'Accepting concedes the dispute: it closes as lost and the amount stays with the cardholder.'}</span>
            <span class="spacer" />
            <button type="button" class="btn btn-secondary" disabled={action.busy} onClick={() => setConfirming(null)}>Cancel</button>
            {confirming === 'submit'
              ? <button type="button" class="btn btn-primary" disabled={action.busy} onClick={submit}>{action.busy ? 'Submitting…' : 'Submit now'}</button>
              : <button type="button" class="btn btn-danger" disabled={action.busy} onClick={accept}>{action.busy ? 'Accepting…' : 'Accept now'}</button>}
          </div>
        ) : (
          <div class="evidence-actions">
            <button type="submit" class="btn btn-secondary" disabled={!dirty || action.busy}>{action.busy ? 'Saving…' : 'Save'}</button>
            <button type="button" class="btn btn-primary" disabled={!hasAny || action.busy} title={hasAny ? 'Send the evidence to the processor' : 'Give some evidence first'}
              onClick={() => setConfirming('submit')}>Submit evidence…</button>
            <span class="spacer" />
            <button type="button" class="btn btn-danger-ghost" disabled={action.busy} onClick={() => setConfirming('accept')}>Accept dispute…</button>
          </div>
        )}
      </form>
    </Section>
  );
}

/** The evidence given, read-only: for a dispute that takes no more answers, or a credential that may not answer. */
export function SavedEvidence({ dispute: d }: { dispute: Dispute }) {
  const given = GROUPS.flatMap((g) => g.fields).filter(({ field }) => d.evidence[field]);
  return (
    <Section title="Evidence" count={given.length}>
      {!given.length ? <p class="muted">No evidence was given.</p> : (
        <dl class="kv evidence-saved" data-testid="saved-evidence">
          {given.map(({ field, label }) => <Fragment key={field}><dt>{label}</dt><dd class="evidence-text" data-field={field}>{d.evidence[field]}</dd></Fragment>)}
        </dl>
      )}
    </Section>
  );
}
