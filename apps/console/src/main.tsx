import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { ListenerForm } from './pages/forms/listener-form.js';
import { LoadBalancerForm } from './pages/forms/load-balancer-form.js';
import { ServerForm, ServersForm } from './pages/forms/server-forms.js';
import { ServerGroupForm } from './pages/forms/server-group-form.js';
import { LoadBalancerPage } from './pages/load-balancer.js';
import { LoadBalancersPage } from './pages/load-balancers.js';
import { NodesPage } from './pages/nodes.js';
import { SignInPage } from './pages/sign-in.js';
import { go, href, useRoute } from './router.js';
import { checkToken, clearToken, openSession, type Session, storedToken, storeToken } from './session.js';
import './styles.css';

function Page({ session, route }: { session: Session; route: string[] }) {
  const [a, b, c, d, e, f, g] = route;
  if (a === 'nodes') return session.admin ? <NodesPage session={session} /> : <NotFound />;
  if (a !== 'lbs' || !b) return <LoadBalancersPage session={session} />;
  if (b === 'new') return <LoadBalancerForm session={session} />;
  if (!c) return <LoadBalancerPage session={session} lbId={b} />;
  if (c === 'edit') return <LoadBalancerForm session={session} lbId={b} />;
  if (c === 'listeners' && d === 'new') return <ListenerForm session={session} lbId={b} />;
  if (c === 'listeners' && d && e === 'edit') return <ListenerForm session={session} lbId={b} lsnId={d} />;
  if (c === 'server-groups' && d === 'new') return <ServerGroupForm session={session} lbId={b} />;
  if (c === 'server-groups' && d && e === 'edit') return <ServerGroupForm session={session} lbId={b} sgId={d} />;
  if (c === 'server-groups' && d && e === 'servers' && f === 'new') {
    return <ServersForm session={session} lbId={b} sgId={d} />;
  }
  if (c === 'server-groups' && d && e === 'servers' && f && g === 'edit') {
    return <ServerForm session={session} lbId={b} sgId={d} srvId={f} />;
  }
  return <NotFound />;
}

function NotFound() {
  return (
    <section>
      <h1 id="page-title" tabIndex={-1}>
        Page not found
      </h1>
      <p>
        <a href={href()}>Load balancers</a>
      </p>
    </section>
  );
}

function App() {
  const route = useRoute();
  const [auth, setAuth] = useState<{ token: string; admin: boolean } | null>(null);
  const [checking, setChecking] = useState(() => storedToken() !== null);
  // A reload keeps the tab's token: check it again (it may have been revoked meanwhile).
  useEffect(() => {
    const token = storedToken();
    if (!token) return;
    checkToken(token)
      .then((role) => {
        if (role === 'invalid') clearToken();
        else setAuth({ token, admin: role === 'admin' });
      })
      .catch(() => {})
      .finally(() => setChecking(false));
  }, []);
  const session = useMemo(() => (auth ? openSession(auth.token, auth.admin) : null), [auth]);
  // A new page takes the focus to its heading, so screen readers announce it.
  const routeKey = route.join('/');
  useEffect(() => {
    document.getElementById('page-title')?.focus();
  }, [routeKey]);

  if (checking) return <p role="status">Signing in…</p>;
  if (!session) {
    return (
      <SignInPage
        onSignedIn={(token, admin) => {
          storeToken(token);
          setAuth({ token, admin });
        }}
      />
    );
  }
  const here = route[0] ?? '';
  return (
    <>
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <span class="brand">SLB console</span>
        <nav aria-label="Main">
          <a href={href()} aria-current={here === '' || here === 'lbs' ? 'page' : undefined}>
            Load balancers
          </a>
          {session.admin ? (
            <a href={href('nodes')} aria-current={here === 'nodes' ? 'page' : undefined}>
              Nodes
            </a>
          ) : null}
        </nav>
        <span class="role">{session.admin ? 'admin' : 'member'}</span>
        <button
          type="button"
          onClick={() => {
            clearToken();
            setAuth(null);
            go();
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page session={session} route={route} />
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
