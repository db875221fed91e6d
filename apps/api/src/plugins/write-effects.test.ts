import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { type WriteEffects, writeEffectsPlugin } from './write-effects.js';

/** A bare app with the plugin, recording what onWrite was told. */
async function appWith(routes: (app: ReturnType<typeof Fastify>) => void) {
  const writes: { effects: WriteEffects; lbId: string | undefined }[] = [];
  const app = Fastify();
  await app.register(writeEffectsPlugin, { onWrite: (effects, lbId) => writes.push({ effects, lbId }) });
  await app.register(
    async (v1) => {
      routes(v1 as never);
    },
    { prefix: '/v1' },
  );
  return { app, writes };
}

describe('write effects', () => {
  it('refuses a write route that declares none, so the app does not start', async () => {
    await expect(appWith((v1) => v1.post('/things', async () => ({})))).rejects.toThrow(
      'POST /v1/things: a write route declares its effects (config.writes)',
    );
  });

  it('asks nothing of reads and of routes outside /v1', async () => {
    const app = Fastify();
    await app.register(writeEffectsPlugin, { onWrite: () => {} });
    app.get('/v1/things', async () => ({}));
    app.post('/control/v1/enroll', async () => ({}));
    await app.ready();
    expect([...app.writeEffects.keys()]).toEqual([]);
    await app.close();
  });

  it('tells each successful write its route declared, with the LB of the path', async () => {
    const { app, writes } = await appWith((v1) => {
      v1.post(
        '/load-balancers/:lbId/listeners',
        { config: { writes: { nodes: true, healthTargets: true } } },
        async () => ({}),
      );
      v1.patch('/load-balancers/:lbId', { config: { writes: { nodes: true } } }, async () => ({}));
      v1.post('/tenants', { config: { writes: {} } }, async () => ({}));
      v1.delete(
        '/acls/:aclId',
        { config: { writes: { nodes: true } } },
        async (_request: FastifyRequest, reply: FastifyReply) => reply.code(404).send({}),
      );
    });
    await app.inject({ method: 'POST', url: '/v1/load-balancers/lb-1/listeners' });
    await app.inject({ method: 'PATCH', url: '/v1/load-balancers/lb-2' });
    await app.inject({ method: 'POST', url: '/v1/tenants' }); // declares no effect
    await app.inject({ method: 'DELETE', url: '/v1/acls/acl-1' }); // refused: nothing changed
    expect(writes).toEqual([
      { effects: { nodes: true, healthTargets: true }, lbId: 'lb-1' },
      { effects: { nodes: true }, lbId: 'lb-2' },
    ]);
    expect(app.writeEffects.get('POST /v1/tenants')).toEqual({});
    await app.close();
  });

  it('tells a write without :lbId the LB its handler named (a created LB), so the hub need not read them all', async () => {
    const { app, writes } = await appWith((v1) => {
      v1.post('/load-balancers', { config: { writes: { nodes: true } } }, async (request: FastifyRequest) => {
        request.writtenLbId = 'lb-new';
        return {};
      });
    });
    await app.inject({ method: 'POST', url: '/v1/load-balancers' });
    expect(writes).toEqual([{ effects: { nodes: true }, lbId: 'lb-new' }]);
    await app.close();
  });
});
