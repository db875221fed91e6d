import { engines, type TestStore } from '@slb/test-support/stores';
import { eq } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { Authenticator, bootstrapAdmin, hashToken, SYSTEM_TENANT_NAME } from '../src/services/auth.js';
import { TenantService } from '../src/services/tenants.js';

// Tenants, tokens and authentication on both engines (issue 23): the same calls, the same answers.

const all = await engines('apps/api/test/tenants-store.test.ts');
let open: TestStore | undefined;
afterEach(async () => {
  await open?.drop();
  open = undefined;
});

describe.each(all)('tenants and tokens on $name', (engine) => {
  const start = async () => {
    open = await engine.open();
    const { store } = open;
    const auth = new Authenticator(store);
    return { store, auth, tenants: new TenantService(store, () => auth) };
  };

  it.skipIf(!engine.available)(
    'bootstraps the system tenant and an admin token once, and takes a given one',
    async () => {
      const { store, auth } = await start();
      const first = await bootstrapAdmin(store, undefined);
      expect(first.generatedToken).toMatch(/^slb_/);
      expect(await bootstrapAdmin(store, undefined)).toEqual({ generatedToken: null });
      const admin = await auth.authenticate(first.generatedToken ?? '');
      expect(admin?.role).toBe('admin');
      const [system] = await store.read((q) =>
        q.select().from(store.t.tenants).where(eq(store.t.tenants.name, SYSTEM_TENANT_NAME)),
      );
      expect(admin?.tenantId).toBe(system?.id);
      // An operator's token replaces the generated one's hash.
      await bootstrapAdmin(store, 'operator-token-0123456789');
      const hashes = await store.read((q) => q.select({ hash: store.t.tokens.secretHash }).from(store.t.tokens));
      expect(hashes).toEqual([{ hash: hashToken('operator-token-0123456789') }]);
      auth.forget();
      expect(await auth.authenticate(first.generatedToken ?? '')).toBeNull();
      expect((await auth.authenticate('operator-token-0123456789'))?.role).toBe('admin');
    },
  );

  it.skipIf(!engine.available)('creates, pages, reads and revokes; a revoked token stops at once', async () => {
    const { store, auth, tenants } = await start();
    const made = [];
    for (const name of ['a', 'b', 'c']) made.push(await tenants.create({ name }));
    const first = await tenants.list({ limit: 2 });
    expect(first.items.map((t) => t.name)).toEqual(['a', 'b']);
    const rest = await tenants.list({ limit: 2, cursor: first.nextCursor ?? undefined });
    expect(rest.items.map((t) => t.name)).toEqual(['c']);
    expect(rest.nextCursor).toBeNull();
    expect(await tenants.get(made[1]?.id ?? '')).toEqual(made[1]);
    await expect(tenants.get('ten-00000000000000000000')).rejects.toMatchObject({ status: 404 });

    const tenantId = made[0]?.id ?? '';
    const token = await tenants.createToken(tenantId, { name: 'ci' });
    const stored = await store.read((q) => q.select().from(store.t.tokens).where(eq(store.t.tokens.id, token.id)));
    expect(stored[0]?.secretHash).toBe(hashToken(token.token));
    expect(await auth.authenticate(token.token)).toEqual({ tokenId: token.id, tenantId, role: 'member' });
    const used = await store.read((q) => q.select().from(store.t.tokens).where(eq(store.t.tokens.id, token.id)));
    expect(used[0]?.lastUsedAt).not.toBeNull();
    expect((await tenants.listTokens(tenantId, {})).items.map((t) => t.id)).toEqual([token.id]);
    await expect(tenants.revokeToken(made[1]?.id ?? '', token.id)).rejects.toMatchObject({ status: 404 });
    await tenants.revokeToken(tenantId, token.id);
    expect(await auth.authenticate(token.token)).toBeNull();
    await expect(tenants.revokeToken(tenantId, token.id)).rejects.toMatchObject({ status: 404 });
  });
});
