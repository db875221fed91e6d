import { useEffect } from 'preact/hooks';
import { unwrap } from '../../api.js';
import { ApiForm, Checkbox, Field, FormPage, Select, useForm } from '../../components/form.js';
import { go, href } from '../../router.js';
import type { Session } from '../../session.js';

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
