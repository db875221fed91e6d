import { LoadBalancerSpec } from './spec.js';

/** Where the published JSON Schema of the load balancer file lives, relative to the package. */
export const SCHEMA_FILE = 'schema/load-balancer-file.schema.json';

/** The JSON Schema (2020-12) of the file, as published: the same object `slb apply` validates with. */
export function schemaDocument(): string {
  return `${JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', ...LoadBalancerSpec }, null, 2)}\n`;
}
