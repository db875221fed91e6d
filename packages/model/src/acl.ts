import { type Static, Type } from '@sinclair/typebox';
import { Description, Name, Page, ResourceId, StrictObject, Timestamps } from './common.js';
import { MAX_ACL_ENTRIES } from './limits.js';

export const AclEntryInput = StrictObject({
  // The API checks it against CIDR_PATTERN (what the nodes accept) and parses it: a bad one is a 422.
  cidr: Type.String({ minLength: 1, maxLength: 49, description: 'IPv4 or IPv6 CIDR, e.g. 10.0.0.0/8, 2001:db8::/32' }),
  description: Type.Optional(Description),
});
export type AclEntryInput = Static<typeof AclEntryInput>;

export const Acl = Type.Object(
  {
    id: ResourceId('acl'),
    name: Type.String(),
    entries: Type.Array(Type.Object({ cidr: Type.String(), description: Type.String() })),
    ...Timestamps,
  },
  { title: 'Acl' },
);
export type Acl = Static<typeof Acl>;

export const CreateAcl = StrictObject(
  { name: Name, entries: Type.Optional(Type.Array(AclEntryInput, { maxItems: MAX_ACL_ENTRIES })) },
  { title: 'CreateAcl' },
);
export type CreateAcl = Static<typeof CreateAcl>;

export const UpdateAcl = Type.Object(
  { name: Type.Optional(Name), entries: Type.Optional(Type.Array(AclEntryInput, { maxItems: MAX_ACL_ENTRIES })) },
  { title: 'UpdateAcl', additionalProperties: false, minProperties: 1 },
);
export type UpdateAcl = Static<typeof UpdateAcl>;

export const AclPage = Page(Acl, 'AclPage');
