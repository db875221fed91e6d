import { useEffect, useState } from 'preact/hooks';
import { unwrap } from '../../api.js';
import { ApiForm, Field, FormPage, useForm } from '../../components/form.js';
import { go, href } from '../../router.js';
import type { Session } from '../../session.js';
import { emptyRow, ServerRows, serversOf } from './server-rows.js';

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
