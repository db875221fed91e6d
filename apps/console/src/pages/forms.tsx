import { useEffect, useState } from 'preact/hooks';
import { type Schemas, unwrap } from '../api.js';
import { ApiForm, Checkbox, Field, FormPage, type FormState, num, Select, useForm } from '../components/form.js';
import { isWebProtocol } from '../listeners.js';
import { go, href } from '../router.js';
import type { Session } from '../session.js';

/*
 * Create and edit forms. Nothing is validated here beyond what the browser must (the form has noValidate): the
 * API's own problem+json errors come back with a field path and are shown next to that field.
 */

export function LoadBalancerForm({ session, lbId }: { session: Session; lbId?: string }) {
  const form = useForm({ name: '', addressType: 'internet', deletionProtection: 'false' }, !!lbId);
  useEffect(() => {
    if (!lbId) return;
    void session.client
      .GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } })
      .then(unwrap)
      .then((lb) =>
        form.replace({ name: lb.name, addressType: lb.addressType, deletionProtection: String(lb.deletionProtection) }),
      );
  }, [lbId]);
  const send = async () => {
    const v = form.values;
    const deletionProtection = v.deletionProtection === 'true';
    if (lbId) {
      unwrap(
        await session.client.PATCH('/v1/load-balancers/{lbId}', {
          params: { path: { lbId } },
          body: { name: v.name ?? '', deletionProtection },
        }),
      );
      go('lbs', lbId);
    } else {
      const lb = unwrap(
        await session.client.POST('/v1/load-balancers', {
          body: { name: v.name ?? '', addressType: v.addressType as 'internet' | 'intranet', deletionProtection },
          headers: { 'idempotency-key': crypto.randomUUID() },
        }),
      );
      go('lbs', lb.id);
    }
  };
  return (
    <FormPage
      title={lbId ? 'Edit load balancer' : 'Create load balancer'}
      back={lbId ? href('lbs', lbId) : href()}
      ready={form.ready}
    >
      <ApiForm form={form} send={send} submitLabel={lbId ? 'Save' : 'Create'}>
        <Field form={form} name="name" label="Name" required hint="1–64 characters" />
        {lbId ? null : (
          <Select
            form={form}
            name="addressType"
            label="Address type"
            options={[
              { value: 'internet', label: 'internet' },
              { value: 'intranet', label: 'intranet' },
            ]}
          />
        )}
        <Checkbox form={form} name="deletionProtection" label="Deletion protection" />
      </ApiForm>
    </FormPage>
  );
}

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

const serversOf = (values: Record<string, string>, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    address: values[`servers.${i}.address`] ?? '',
    port: num(values[`servers.${i}.port`]) as number,
    ...(num(values[`servers.${i}.weight`]) === undefined ? {} : { weight: num(values[`servers.${i}.weight`]) }),
  }));

const emptyRow = (i: number) => ({
  [`servers.${i}.address`]: '',
  [`servers.${i}.port`]: '',
  [`servers.${i}.weight`]: '',
});

/**
 * Server rows `servers.N.address|port|weight`, as many as `count`, with a button that adds an empty row (and, when
 * `removable`, one that drops the last).
 */
function ServerRows(props: { form: FormState; count: number; setCount: (n: number) => void; removable?: boolean }) {
  const { form, count, setCount } = props;
  return (
    <>
      {Array.from({ length: count }, (_, i) => (
        <fieldset key={i} class="server-row">
          <legend>Server {i + 1}</legend>
          <Field form={form} name={`servers.${i}.address`} label="Address" required hint="IPv4 or IPv6" />
          <Field form={form} name={`servers.${i}.port`} label="Port" type="number" required />
          <Field form={form} name={`servers.${i}.weight`} label="Weight" type="number" hint="0–100, default 100" />
        </fieldset>
      ))}
      <div class="form-actions">
        <button
          type="button"
          onClick={() => {
            form.replace({ ...form.values, ...emptyRow(count) });
            setCount(count + 1);
          }}
        >
          Add another server
        </button>
        {props.removable && count > 0 ? (
          <button type="button" onClick={() => setCount(count - 1)}>
            Remove last server
          </button>
        ) : null}
      </div>
    </>
  );
}

export function ServerGroupForm({ session, lbId, sgId }: { session: Session; lbId: string; sgId?: string }) {
  const form = useForm({ name: '', ...emptyRow(0) }, !!sgId);
  const [count, setCount] = useState(sgId ? 0 : 1);
  useEffect(() => {
    if (!sgId) return;
    void session.client
      .GET('/v1/load-balancers/{lbId}/server-groups/{sgId}', { params: { path: { lbId, sgId } } })
      .then(unwrap)
      .then((g) => form.replace({ name: g.name }));
  }, [lbId, sgId]);
  const send = async () => {
    if (sgId) {
      unwrap(
        await session.client.PATCH('/v1/load-balancers/{lbId}/server-groups/{sgId}', {
          params: { path: { lbId, sgId } },
          body: { name: form.values.name ?? '' },
        }),
      );
    } else {
      unwrap(
        await session.client.POST('/v1/load-balancers/{lbId}/server-groups', {
          params: { path: { lbId } },
          body: { name: form.values.name ?? '', ...(count > 0 ? { servers: serversOf(form.values, count) } : {}) },
          headers: { 'idempotency-key': crypto.randomUUID() },
        }),
      );
    }
    go('lbs', lbId);
  };
  return (
    <FormPage title={sgId ? 'Edit server group' : 'Add server group'} back={href('lbs', lbId)} ready={form.ready}>
      <ApiForm form={form} send={send} submitLabel={sgId ? 'Save' : 'Add server group'}>
        <Field form={form} name="name" label="Name" required />
        {sgId ? null : <ServerRows form={form} count={count} setCount={setCount} removable />}
      </ApiForm>
    </FormPage>
  );
}

export function ServersForm({ session, lbId, sgId }: { session: Session; lbId: string; sgId: string }) {
  const form = useForm({ ...emptyRow(0) });
  const [count, setCount] = useState(1);
  const send = async () => {
    unwrap(
      await session.client.POST('/v1/load-balancers/{lbId}/server-groups/{sgId}/servers', {
        params: { path: { lbId, sgId } },
        body: { servers: serversOf(form.values, count) },
      }),
    );
    go('lbs', lbId);
  };
  return (
    <FormPage title="Add servers" back={href('lbs', lbId)}>
      <ApiForm form={form} send={send} submitLabel="Add servers">
        <ServerRows form={form} count={count} setCount={setCount} />
      </ApiForm>
    </FormPage>
  );
}

export function ServerForm(props: { session: Session; lbId: string; sgId: string; srvId: string }) {
  const { session, lbId, sgId, srvId } = props;
  const form = useForm({ weight: '', description: '' }, true);
  const [name, setName] = useState(srvId);
  useEffect(() => {
    void session.client
      .GET('/v1/load-balancers/{lbId}/server-groups/{sgId}/servers/{srvId}', {
        params: { path: { lbId, sgId, srvId } },
      })
      .then(unwrap)
      .then((s) => {
        setName(`${s.address}:${s.port}`);
        form.replace({ weight: String(s.weight), description: s.description });
      });
  }, [srvId]);
  const send = async () => {
    unwrap(
      await session.client.PATCH('/v1/load-balancers/{lbId}/server-groups/{sgId}/servers/{srvId}', {
        params: { path: { lbId, sgId, srvId } },
        body: { weight: num(form.values.weight), description: form.values.description ?? '' },
      }),
    );
    go('lbs', lbId);
  };
  return (
    <FormPage title={`Edit server ${name}`} back={href('lbs', lbId)} ready={form.ready}>
      <ApiForm form={form} send={send} submitLabel="Save">
        <Field form={form} name="weight" label="Weight" type="number" hint="0–100; 0 takes no new connections" />
        <Field form={form} name="description" label="Description" />
      </ApiForm>
    </FormPage>
  );
}
