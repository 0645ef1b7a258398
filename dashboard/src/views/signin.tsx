import { useState } from 'preact/hooks';
import { Account, ApiError, listAccounts, Session } from '../api';

/** Sign in with a secret API key or a JWT; a JWT with several accounts picks one. */
export function SignIn({ onSignedIn, notice }: { onSignedIn: (session: Session) => void; notice: string | null }) {
  const [token, setToken] = useState('');
  const [accounts, setAccounts] = useState<Account[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const credential = token.trim().replace(/^Bearer\s+/i, '');
    if (!credential) return setError('Paste an API key (sk_…) or a JWT.');
    setBusy(true);
    setError(null);
    try {
      const found = await listAccounts(credential);
      if (found.length === 0) setError('This credential has no accounts to show.');
      else if (found.length === 1) onSignedIn({ token: credential, accountId: found[0].id });
      else setAccounts(found);
    } catch (err) {
      if (err instanceof ApiError && err.reason === 'publishable_key_not_allowed') setError('Publishable keys (pk_…) cannot read the dashboard. Use a secret key or a JWT.');
      else if (err instanceof ApiError && err.status === 401) setError(`That credential was not accepted: ${err.message}`);
      else setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  if (accounts) {
    return (
      <div class="signin">
        <div class="signin-card">
          <h1>Choose an account</h1>
          <p class="muted">Your token can open {accounts.length} accounts.</p>
          <ul class="account-picker">
            {accounts.map((a) => (
              <li key={a.id}>
                <button type="button" class="account-choice" onClick={() => onSignedIn({ token: token.trim().replace(/^Bearer\s+/i, ''), accountId: a.id })}>
                  <span class="account-name">{a.name}</span>
                  <span class={`env env-${a.environment}`}>{a.environment === 'sandbox' ? 'Sandbox' : 'Live'}</span>
                  <code class="muted">{a.id}</code>
                </button>
              </li>
            ))}
          </ul>
          <button type="button" class="btn btn-ghost" onClick={() => setAccounts(null)}>← Use another credential</button>
        </div>
      </div>
    );
  }

  return (
    <div class="signin">
      <form class="signin-card" onSubmit={submit}>
        <div class="brand big"><span class="logo" aria-hidden="true">⇄</span> Switchboard</div>
        <h1>Sign in to the dashboard</h1>
        <p class="muted">Use a secret API key (<code>sk_live_…</code> / <code>sk_test_…</code>) or a JWT. It is kept in this tab only and sent only to this server's API.</p>
        {notice ? <div class="notice">{notice}</div> : null}
        <label for="credential">API key or JWT</label>
        <textarea id="credential" name="credential" rows={3} spellcheck={false} autoComplete="off" placeholder="sk_test_… or eyJ…"
          value={token} onInput={(e) => setToken((e.target as HTMLTextAreaElement).value)} />
        {error ? <div class="form-error" role="alert">{error}</div> : null}
        <button type="submit" class="btn btn-primary" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </div>
  );
}
