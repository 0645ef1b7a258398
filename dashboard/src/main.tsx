import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Account, clearSession, client, loadSession, saveSession, Session } from './api';
import { Link } from './components';
import { match, navigate, useLocation } from './router';
import { SignIn } from './views/signin';
import { PaymentList } from './views/payments';
import { PaymentDetail } from './views/payment';
import { Webhooks } from './views/webhooks';
import { EndpointDetail } from './views/endpoint';
import { DeliveryDetail } from './views/delivery';
import { Providers } from './views/providers';
import { AuditLog } from './views/audit';
import { CheckoutSessionList } from './views/checkout-sessions';
import { CheckoutSessionDetail } from './views/checkout-session';
import { PaymentLinkDetail, PaymentLinkList } from './views/payment-links';
import { SubscriptionList } from './views/subscriptions';
import { SubscriptionDetail } from './views/subscription';
import { InvoiceList } from './views/invoices';
import { InvoiceDetail } from './views/invoice';
import { DisputeList } from './views/disputes';
import { DisputeDetail } from './views/dispute';
import './styles.css';

function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const [account, setAccount] = useState<Account | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const location = useLocation();

  const signOut = (message?: string) => {
    clearSession();
    setSession(null);
    setAccount(null);
    setNotice(message ?? null);
    navigate('/', { replace: true });
  };

  useEffect(() => {
    if (!session) return;
    client(session).account().then(setAccount, () => setAccount(null));
  }, [session]);

  if (!session) {
    return (
      <SignIn notice={notice} onSignedIn={(s) => {
        saveSession(s);
        setNotice(null);
        setSession(s);
        if (location.path === '/') navigate('/payments', { replace: true });
      }} />
    );
  }

  const api = client(session);
  const expired = () => signOut('Your session ended (the credential was rejected). Sign in again.');
  const { path, query } = location;
  let view;
  let section: 'payments' | 'disputes' | 'checkout' | 'billing' | 'webhooks' | 'providers' | 'audit' = 'payments';
  let params: Record<string, string> | null;
  if ((params = match('/payments/:id', path))) view = <PaymentDetail api={api} id={params.id} onUnauthorized={expired} />;
  else if ((params = match('/disputes/:id', path))) { section = 'disputes'; view = <DisputeDetail api={api} id={params.id} onUnauthorized={expired} />; }
  else if (path === '/disputes') { section = 'disputes'; view = <DisputeList api={api} query={query} onUnauthorized={expired} />; }
  else if ((params = match('/checkout/sessions/:id', path))) { section = 'checkout'; view = <CheckoutSessionDetail api={api} id={params.id} onUnauthorized={expired} />; }
  else if ((params = match('/checkout/links/:id', path))) { section = 'checkout'; view = <PaymentLinkDetail api={api} id={params.id} onUnauthorized={expired} />; }
  else if (path === '/checkout/links') { section = 'checkout'; view = <PaymentLinkList api={api} query={query} onUnauthorized={expired} />; }
  else if (path === '/checkout') { section = 'checkout'; view = <CheckoutSessionList api={api} query={query} onUnauthorized={expired} />; }
  else if ((params = match('/billing/subscriptions/:id', path))) { section = 'billing'; view = <SubscriptionDetail api={api} id={params.id} onUnauthorized={expired} />; }
  else if ((params = match('/billing/invoices/:id', path))) { section = 'billing'; view = <InvoiceDetail api={api} id={params.id} onUnauthorized={expired} />; }
  else if (path === '/billing/invoices') { section = 'billing'; view = <InvoiceList api={api} query={query} onUnauthorized={expired} />; }
  else if (path === '/billing' || path === '/billing/subscriptions') { section = 'billing'; view = <SubscriptionList api={api} query={query} onUnauthorized={expired} />; }
  else if ((params = match('/webhooks/endpoints/:id', path))) { section = 'webhooks'; view = <EndpointDetail api={api} id={params.id} onUnauthorized={expired} />; }
  else if ((params = match('/webhooks/deliveries/:id', path))) { section = 'webhooks'; view = <DeliveryDetail api={api} id={params.id} onUnauthorized={expired} />; }
  else if (path === '/webhooks') { section = 'webhooks'; view = <Webhooks api={api} query={query} onUnauthorized={expired} />; }
  else if (path === '/providers') { section = 'providers'; view = <Providers api={api} query={query} onUnauthorized={expired} />; }
  else if (path === '/audit') { section = 'audit'; view = <AuditLog api={api} query={query} onUnauthorized={expired} />; }
  else view = <PaymentList api={api} query={query} onUnauthorized={expired} />;

  return (
    <div class="shell">
      <header class="topbar">
        <div class="brand"><span class="logo" aria-hidden="true">⇄</span> Switchboard</div>
        <nav class="nav">
          <Link to="/payments" class={section === 'payments' ? 'active' : ''}>Payments</Link>
          <Link to="/disputes" class={section === 'disputes' ? 'active' : ''}>Disputes</Link>
          <Link to="/checkout" class={section === 'checkout' ? 'active' : ''}>Checkout</Link>
          <Link to="/billing" class={section === 'billing' ? 'active' : ''}>Billing</Link>
          <Link to="/webhooks" class={section === 'webhooks' ? 'active' : ''}>Webhooks</Link>
          <Link to="/providers" class={section === 'providers' ? 'active' : ''}>Providers</Link>
          <Link to="/audit" class={section === 'audit' ? 'active' : ''}>Audit log</Link>
        </nav>
        <div class="who">
          {account ? (
            <span class="account" title={account.id}>
              {account.name}
              <span class={`env env-${account.environment}`}>{account.environment === 'sandbox' ? 'Sandbox' : 'Live'}</span>
            </span>
          ) : <code class="muted">{session.accountId}</code>}
          <button type="button" class="btn btn-ghost" onClick={() => signOut()}>Sign out</button>
        </div>
      </header>
      <main class="main">{view}</main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
