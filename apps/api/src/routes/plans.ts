import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Plan, PlanOperation, PlanRequest } from '@slb/model';
import { compileBody } from '../plugins/validation.js';
import { runPlan } from '../services/plans.js';
import { AUTH_PROBLEMS, problems } from './shared.js';

/**
 * The request as it is validated: each operation against the one write its `op` names (a tagged union), so
 * a bad port is reported at its path instead of as every other operation's missing fields. The document
 * keeps the plain union.
 */
const PlanRequestByOp = {
  ...PlanRequest,
  properties: {
    operations: {
      ...PlanRequest.properties.operations,
      items: { type: 'object', required: ['op'], discriminator: { propertyName: 'op' }, oneOf: PlanOperation.anyOf },
    },
  },
};

const compilePlanRequest = () => compileBody(PlanRequestByOp);

export const planRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/plans', {
    // Writes nothing that stays: the nodes are not told to recompile, the health checks not replanned, no
    // api event is recorded.
    config: { dryRun: true, writes: {} },
    schema: {
      tags: ['plans'],
      operationId: 'planChanges',
      body: PlanRequest,
      response: { 200: Plan, ...problems(...AUTH_PROBLEMS, 404, 409, 412, 413, 415, 422) },
    },
    validatorCompiler: () => app.deferredCompiles.validator(compilePlanRequest),
    handler: (request) => runPlan(app.data, app.services, request.auth, request.body.operations),
  });
};
