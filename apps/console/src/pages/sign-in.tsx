import { useState } from 'preact/hooks';
import { messageOf } from '../api.js';
import { checkToken } from '../session.js';

/** The token is typed (or pasted) here, checked against the API, and kept in this tab only. */
export function SignInPage({ onSignedIn }: { onSignedIn: (token: string, admin: boolean) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    const value = token.trim();
    if (value === '') {
      setError('Enter an API token.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const role = await checkToken(value);
      if (role === 'invalid') setError('The API did not accept this token.');
      else onSignedIn(value, role === 'admin');
    } catch (err) {
      setError(`The API could not be reached: ${messageOf(err)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="sign-in">
      <h1 id="page-title">Sign in to the SLB console</h1>
      <form onSubmit={onSubmit} noValidate aria-labelledby="page-title">
        <div class={`field${error ? ' invalid' : ''}`}>
          <label for="token">API token</label>
          <input
            id="token"
            name="token"
            type="password"
            autoComplete="off"
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
            aria-invalid={error ? 'true' : undefined}
            aria-describedby={error ? 'token-hint token-error' : 'token-hint'}
          />
          <p class="hint" id="token-hint">
            An admin or member token (the local cloud's admin token is in data/admin-token). It is kept in this tab
            only, and forgotten when you sign out or close the tab.
          </p>
          {error ? (
            <p class="error" id="token-error" role="alert">
              {error}
            </p>
          ) : null}
        </div>
        <div class="form-actions">
          <button type="submit" class="primary" disabled={busy}>
            {busy ? 'Checking…' : 'Sign in'}
          </button>
        </div>
      </form>
    </main>
  );
}
