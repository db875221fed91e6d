import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CreateRule, ListQuery, PathId, Rule, RulePage, UpdateRule } from '@slb/model';
import { toRule } from '../services/rules.js';
import {
  AUTH_PROBLEMS,
  created,
  IdempotencyHeaders,
  IfMatchHeaders,
  NoContent,
  problems,
  scope,
  withEtag,
} from './shared.js';

const tags = ['rules'];
const LsnParams = Type.Object({ lbId: PathId, lsnId: PathId });
const RuleParams = Type.Object({ lbId: PathId, lsnId: PathId, ruleId: PathId });

export const ruleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const rules = app.services.rules;

  app.get('/load-balancers/:lbId/listeners/:lsnId/rules', {
    schema: {
      tags,
      operationId: 'listRules',
      params: LsnParams,
      querystring: ListQuery,
      response: { 200: RulePage, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: (request) => rules.list(scope(request), request.params.lbId, request.params.lsnId, request.query),
  });

  app.post('/load-balancers/:lbId/listeners/:lsnId/rules', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'createRule',
      params: LsnParams,
      headers: IdempotencyHeaders,
      body: CreateRule,
      response: { 201: Rule, ...problems(...AUTH_PROBLEMS, 404, 409, 413, 415, 422) },
    },
    handler: (request, reply) =>
      created(app, request, reply, async () => {
        const row = await rules.create(scope(request), request.params.lbId, request.params.lsnId, request.body);
        return { body: toRule(row), revision: row.revision };
      }),
  });

  app.get('/load-balancers/:lbId/listeners/:lsnId/rules/:ruleId', {
    schema: {
      tags,
      operationId: 'getRule',
      params: RuleParams,
      response: { 200: Rule, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request, reply) => {
      const { lbId, lsnId, ruleId } = request.params;
      const row = await rules.find(scope(request), lbId, lsnId, ruleId);
      return withEtag(reply, row.revision, toRule(row));
    },
  });

  app.patch('/load-balancers/:lbId/listeners/:lsnId/rules/:ruleId', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'updateRule',
      params: RuleParams,
      headers: IfMatchHeaders,
      body: UpdateRule,
      response: { 200: Rule, ...problems(...AUTH_PROBLEMS, 404, 409, 412, 413, 415, 422) },
    },
    handler: async (request, reply) => {
      const { lbId, lsnId, ruleId } = request.params;
      const row = await rules.update(scope(request), lbId, lsnId, ruleId, request.body, request.headers['if-match']);
      return withEtag(reply, row.revision, toRule(row));
    },
  });

  app.delete('/load-balancers/:lbId/listeners/:lsnId/rules/:ruleId', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'deleteRule',
      params: RuleParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 404, 412) },
    },
    handler: async (request, reply) => {
      const { lbId, lsnId, ruleId } = request.params;
      await rules.remove(scope(request), lbId, lsnId, ruleId, request.headers['if-match']);
      return reply.code(204).send(null);
    },
  });
};
