import { useEffect, useState } from 'preact/hooks';
import { type Schemas, unwrap } from '../../api.js';
import { ApiForm, Checkbox, Field, FormPage, num, Select, useForm } from '../../components/form.js';
import { isWebProtocol } from '../../listeners.js';
import { go, href } from '../../router.js';
import type { Session } from '../../session.js';

type Listener = Schemas['Listener'];
const PROTOCOLS = ['tcp', 'udp', 'http', 'https'] as const;
const SCHEDULERS = ['wrr', 'wlc', 'rr', 'sch', 'tch'] as const;

export function ListenerForm({ session, lbId, lsnId }: { session: Session; lbId: string; lsnId?: string }) {
  const form = useForm(
    {
      protocol: 'tcp',
      port: '',
      backendPort: '',
      serverGroupId: '',
      scheduler: 'wrr',
      'healthCheck.enabled': 'true',
      'healthCheck.interval': '',
      'healthCheck.unhealthyThreshold': '',
      'healthCheck.healthyThreshold': '',
      'healthCheck.path': '',
      description: '',
    },
    !!lsnId,
  );
  const [groups, setGroups] = useState<Schemas['ServerGroup'][]>([]);
  useEffect(() => {
    void session.client
      .GET('/v1/load-balancers/{lbId}/server-groups', { params: { path: { lbId }, query: { limit: 500 } } })
      .then(unwrap)
      .then((page) => {
        setGroups(page.items);
        if (!lsnId && page.items[0]) form.set('serverGroupId', page.items[0].id);
      });
    if (lsnId) {
      void session.client
        .GET('/v1/load-balancers/{lbId}/listeners/{lsnId}', { params: { path: { lbId, lsnId } } })
        .then(unwrap)
        .then((l: Listener) =>
          form.replace({
            protocol: l.protocol,
            port: String(l.port),
            backendPort: l.backendPort === null ? '' : String(l.backendPort),
            serverGroupId: l.serverGroupId,
            scheduler: l.scheduler,
            'healthCheck.enabled': String(l.healthCheck.enabled),
            'healthCheck.interval': String(l.healthCheck.interval),
            'healthCheck.unhealthyThreshold': String(l.healthCheck.unhealthyThreshold),
            'healthCheck.healthyThreshold': String(l.healthCheck.healthyThreshold),
            'healthCheck.path': l.healthCheck.path ?? '',
            description: l.description,
          }),
        );
    }
  }, [lbId, lsnId]);
  const v = form.values;
  const web = isWebProtocol(v.protocol);
  const send = async () => {
    const healthCheck = {
      enabled: v['healthCheck.enabled'] === 'true',
      interval: num(v['healthCheck.interval']),
      unhealthyThreshold: num(v['healthCheck.unhealthyThreshold']),
      healthyThreshold: num(v['healthCheck.healthyThreshold']),
      ...(web && v['healthCheck.path'] ? { path: v['healthCheck.path'] } : {}),
    };
    const options = {
      backendPort: num(v.backendPort),
      scheduler: v.scheduler as (typeof SCHEDULERS)[number],
      healthCheck,
      ...(v.description ? { description: v.description } : {}),
    };
    if (lsnId) {
      unwrap(
        await session.client.PATCH('/v1/load-balancers/{lbId}/listeners/{lsnId}', {
          params: { path: { lbId, lsnId } },
          body: { serverGroupId: v.serverGroupId, ...options },
        }),
      );
    } else {
      unwrap(
        await session.client.POST('/v1/load-balancers/{lbId}/listeners', {
          params: { path: { lbId } },
          body: {
            protocol: v.protocol as (typeof PROTOCOLS)[number],
            port: num(v.port) as number,
            serverGroupId: v.serverGroupId ?? '',
            ...options,
          },
          headers: { 'idempotency-key': crypto.randomUUID() },
        }),
      );
    }
    go('lbs', lbId);
  };
  return (
    <FormPage title={lsnId ? 'Edit listener' : 'Add listener'} back={href('lbs', lbId)} ready={form.ready}>
      <ApiForm form={form} send={send} submitLabel={lsnId ? 'Save' : 'Add listener'}>
        {lsnId ? (
          <p>
            {v.protocol}:{v.port} (protocol and port are fixed once created)
          </p>
        ) : (
          <>
            <Select
              form={form}
              name="protocol"
              label="Protocol"
              options={PROTOCOLS.map((p) => ({ value: p, label: p }))}
            />
            <Field
              form={form}
              name="port"
              label="Port"
              type="number"
              required
              hint="1–65535, on the load balancer's VIP"
            />
          </>
        )}
        <Field form={form} name="backendPort" label="Backend port" type="number" hint="empty: each server's own port" />
        {groups.length === 0 ? (
          <p class="error">This load balancer has no server group yet: add one first.</p>
        ) : (
          <Select
            form={form}
            name="serverGroupId"
            label="Server group"
            options={groups.map((g) => ({ value: g.id, label: `${g.name} (${g.servers.length} servers)` }))}
          />
        )}
        <Select
          form={form}
          name="scheduler"
          label="Scheduler"
          options={SCHEDULERS.map((s) => ({ value: s, label: s }))}
        />
        <fieldset>
          <legend>Health check</legend>
          <Checkbox form={form} name="healthCheck.enabled" label="Enabled" />
          <Field form={form} name="healthCheck.interval" label="Interval (s)" type="number" hint="1–50, default 2" />
          <Field
            form={form}
            name="healthCheck.unhealthyThreshold"
            label="Unhealthy threshold"
            type="number"
            hint="2–10 failed checks, default 3"
          />
          <Field
            form={form}
            name="healthCheck.healthyThreshold"
            label="Healthy threshold"
            type="number"
            hint="2–10 passed checks, default 3"
          />
          {web ? <Field form={form} name="healthCheck.path" label="Path" hint="default /" /> : null}
        </fieldset>
        <Field form={form} name="description" label="Description" />
      </ApiForm>
    </FormPage>
  );
}
