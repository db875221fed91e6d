import { describe, expect, it } from 'vitest';
import { writeChangesHealthTargets } from './write-routes.js';

describe('writeChangesHealthTargets', () => {
  it.each([
    ['POST', '/v1/load-balancers/:lbId/listeners'],
    ['PATCH', '/v1/load-balancers/:lbId/listeners/:lsnId'],
    ['DELETE', '/v1/load-balancers/:lbId/listeners/:lsnId'],
    ['POST', '/v1/load-balancers/:lbId/listeners/:lsnId/start'],
    ['POST', '/v1/load-balancers/:lbId/listeners/:lsnId/stop'],
    ['POST', '/v1/load-balancers/:lbId/listeners/:lsnId/rules'],
    ['PATCH', '/v1/load-balancers/:lbId/listeners/:lsnId/rules/:ruleId'],
    ['POST', '/v1/load-balancers/:lbId/server-groups/:sgId/servers'],
    ['DELETE', '/v1/load-balancers/:lbId/server-groups/:sgId/servers/:srvId'],
    ['DELETE', '/v1/load-balancers/:lbId'],
    ['DELETE', '/v1/load-balancers/:lbId/server-groups/:sgId'],
    ['POST', '/v1/something-new'],
  ])('%s %s may change the checked targets', (method, url) => {
    expect(writeChangesHealthTargets(method, url)).toBe(true);
  });

  it.each([
    ['PATCH', '/v1/load-balancers/:lbId/server-groups/:sgId/servers/:srvId'],
    ['PATCH', '/v1/load-balancers/:lbId/server-groups/:sgId'],
    ['PATCH', '/v1/load-balancers/:lbId'],
    ['POST', '/v1/load-balancers'],
    ['POST', '/v1/load-balancers/:lbId/server-groups'],
    ['POST', '/v1/certificates'],
    ['DELETE', '/v1/acls/:aclId'],
    ['POST', '/v1/tenants/:tenantId/tokens'],
    ['PATCH', '/v1/nodes/:nodeId'],
  ])('%s %s does not', (method, url) => {
    expect(writeChangesHealthTargets(method, url)).toBe(false);
  });
});
