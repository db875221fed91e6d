import { type Static, Type } from '@sinclair/typebox';
import { Nullable, Page, ResourceId, StrictObject, Timestamps } from './common.js';

const RuleDomain = Type.String({
  maxLength: 253,
  pattern: '^(\\*\\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$',
  description: 'exact host or *.example.com wildcard',
});
const RulePath = Type.String({ minLength: 1, maxLength: 200, pattern: "^/[A-Za-z0-9\\-._~!$&'()*+,;=:@%/]*$" });
const Priority = Type.Integer({ minimum: 1, maximum: 10000, description: 'lower is evaluated first among equals' });

export const Rule = Type.Object(
  {
    id: ResourceId('rule'),
    listenerId: ResourceId('listener'),
    domain: Nullable(Type.String()),
    path: Nullable(Type.String()),
    serverGroupId: ResourceId('serverGroup'),
    priority: Type.Integer(),
    ...Timestamps,
  },
  { title: 'Rule' },
);
export type Rule = Static<typeof Rule>;

export const CreateRule = StrictObject(
  {
    domain: Type.Optional(RuleDomain),
    path: Type.Optional(RulePath),
    serverGroupId: Type.String({ minLength: 1, maxLength: 64 }),
    priority: Type.Optional(Priority),
  },
  { title: 'CreateRule' },
);
export type CreateRule = Static<typeof CreateRule>;

export const UpdateRule = Type.Object(
  {
    domain: Type.Optional(Nullable(RuleDomain)),
    path: Type.Optional(Nullable(RulePath)),
    serverGroupId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    priority: Type.Optional(Priority),
  },
  { title: 'UpdateRule', additionalProperties: false, minProperties: 1 },
);
export type UpdateRule = Static<typeof UpdateRule>;

export const RulePage = Page(Rule, 'RulePage');
