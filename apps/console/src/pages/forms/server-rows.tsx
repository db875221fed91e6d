import { Field, type FormState, num } from '../../components/form.js';

/** The rows as the API's server list; an empty weight is left out, so the API applies its default. */
export const serversOf = (values: Record<string, string>, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    address: values[`servers.${i}.address`] ?? '',
    port: num(values[`servers.${i}.port`]) as number,
    ...(num(values[`servers.${i}.weight`]) === undefined ? {} : { weight: num(values[`servers.${i}.weight`]) }),
  }));

/** A new row's names in the form's values, so the API's errors about them show by their fields (see FormError). */
export const emptyRow = (i: number) => ({
  [`servers.${i}.address`]: '',
  [`servers.${i}.port`]: '',
  [`servers.${i}.weight`]: '',
});

/**
 * Server rows `servers.N.address|port|weight`, as many as `count`, with a button that adds an empty row (and, when
 * `removable`, one that drops the last).
 */
export function ServerRows(props: {
  form: FormState;
  count: number;
  setCount: (n: number) => void;
  removable?: boolean;
}) {
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
