import { useEffect, useState } from 'preact/hooks';
import { unwrap } from '../../api.js';
import { ApiForm, Field, FormPage, num, useForm } from '../../components/form.js';
import { go, href } from '../../router.js';
import type { Session } from '../../session.js';
import { emptyRow, ServerRows, serversOf } from './server-rows.js';

/** Adds servers to an existing group. */
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

/** Edits one server: only its weight and description can change. */
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
