import { ENROLL_PATH, type EnrollResponse } from '@slb/model';
import type { FastifyInstance } from 'fastify';
import { problem } from '../errors.js';
import { bearerOf } from './channel-server.js';
import type { ControlHub } from './hub.js';
import { redeemJoinToken } from './node-credentials.js';
import type { UpgradeGuard } from './upgrade-guard.js';

/**
 * Where a node exchanges its one-time join token for its credential. Not under /v1 (a node is no API
 * client) and so outside the API's token hooks: it shares the channel's per-address limits instead.
 */
export function installEnrollRoute(app: FastifyInstance, hub: ControlHub, guard: UpgradeGuard): void {
  app.post(ENROLL_PATH, { schema: { hide: true } }, async (request, reply) => {
    const remote = request.socket.remoteAddress ?? 'unknown';
    const token = bearerOf(request.headers.authorization);
    // As on the channel: only failures count against the address, so a good join token always goes through.
    const enrolled = token ? await redeemJoinToken(app.data, token) : null;
    if (!enrolled) {
      if (guard.admit(remote) !== 'ok') {
        reply.header('retry-after', '10');
        return reply.code(429).type('application/problem+json').send(problem('rate_limited', 'too many attempts'));
      }
      guard.failed(remote, 'unknown, used or expired join token');
      return reply
        .code(401)
        .type('application/problem+json')
        .send(problem('unauthorized', 'unknown, used or expired join token'));
    }
    // A rotation: whatever session the node had ran on the credential just replaced.
    hub.disconnect(enrolled.nodeId, 'credential rotated');
    request.log.info({ nodeId: enrolled.nodeId, kind: enrolled.kind }, 'node enrolled');
    const body: EnrollResponse = enrolled;
    return reply.code(200).send(body);
  });
}
