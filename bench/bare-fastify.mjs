// The reference for bench/api.mjs: fastify with no auth, no database, returning a fixed JSON body.
import Fastify from 'fastify';

const body = JSON.parse(process.env.BODY ?? '{}');
const app = Fastify({ logger: false });
app.get('/healthz', () => ({ status: 'ok' }));
app.get('/lb', () => body);
app.post('/lb', (_request, reply) => reply.code(201).send(body));
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
