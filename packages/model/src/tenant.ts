import { type Static, Type } from '@sinclair/typebox';
import { Name, Nullable, Page, ResourceId, StrictObject, StringEnum, Timestamps } from './common.js';

export const Role = StringEnum(['admin', 'member']);
export type Role = Static<typeof Role>;

export const Tenant = Type.Object(
  { id: ResourceId('tenant'), name: Type.String(), ...Timestamps },
  { title: 'Tenant' },
);
export type Tenant = Static<typeof Tenant>;

export const CreateTenant = StrictObject({ name: Name }, { title: 'CreateTenant' });
export type CreateTenant = Static<typeof CreateTenant>;

export const Token = Type.Object(
  {
    id: ResourceId('token'),
    tenantId: ResourceId('tenant'),
    name: Type.String(),
    role: Role,
    lastUsedAt: Nullable(Type.String({ format: 'date-time' })),
    ...Timestamps,
  },
  { title: 'Token' },
);
export type Token = Static<typeof Token>;

/** Returned once, by the create call: the secret itself is stored only as a hash. */
export const CreatedToken = Type.Object(
  { ...Token.properties, token: Type.String({ description: 'the bearer token; shown only in this response' }) },
  { title: 'CreatedToken' },
);
export type CreatedToken = Static<typeof CreatedToken>;

export const CreateToken = StrictObject(
  { name: Type.Optional(Name), role: Type.Optional(Role) },
  { title: 'CreateToken' },
);
export type CreateToken = Static<typeof CreateToken>;

export const TenantPage = Page(Tenant, 'TenantPage');
export const TokenPage = Page(Token, 'TokenPage');
