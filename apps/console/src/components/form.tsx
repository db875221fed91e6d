import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { fieldErrors } from '../api.js';

/** Values by field name (`port`, `servers.0.address`), all text as the inputs hold them. */
export type Values = Record<string, string>;

export interface FormState {
  values: Values;
  set(name: string, value: string): void;
  errors: Record<string, string>;
  busy: boolean;
  /** Runs `send`; an API problem's errors land next to their fields and the first one takes the focus. */
  submit(send: () => Promise<void>): Promise<void>;
  formRef: { current: HTMLFormElement | null };
  /** Sets every value (an edit form's resource, once read): the form is shown from then on. */
  replace(values: Values): void;
  /** False while an edit form waits for its resource: typing before it arrives would be overwritten. */
  ready: boolean;
}

/** `editing`: the form is hidden until replace() brings the resource's values. */
export function useForm(initial: Values, editing = false): FormState {
  const [values, setValues] = useState<Values>(initial);
  const [ready, setReady] = useState(!editing);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const formRef = useRef<HTMLFormElement | null>(null);
  useEffect(() => {
    if (Object.keys(errors).length === 0) return;
    const invalid = formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"], [data-form-error]');
    invalid?.focus();
  }, [errors]);
  return {
    values,
    errors,
    busy,
    formRef,
    set: (name, value) => setValues((v) => ({ ...v, [name]: value })),
    ready,
    replace: (next) => {
      setValues(next);
      setReady(true);
    },
    submit: async (send) => {
      setBusy(true);
      setErrors({});
      try {
        await send();
      } catch (err) {
        setErrors(fieldErrors(err));
      } finally {
        setBusy(false);
      }
    },
  };
}

const idOf = (name: string) => `f-${name.replaceAll('.', '-')}`;

interface FieldProps {
  form: FormState;
  name: string;
  label: string;
  type?: 'text' | 'number' | 'password';
  hint?: string;
  required?: boolean;
  autoComplete?: string;
}

/** A labelled input whose API error (by its name) is shown under it and announced with it. */
export function Field({ form, name, label, type = 'text', hint, required, autoComplete }: FieldProps) {
  const id = idOf(name);
  const error = form.errors[name];
  const described = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div class={`field${error ? ' invalid' : ''}`}>
      <label for={id}>
        {label}
        {required ? <span aria-hidden="true"> *</span> : null}
      </label>
      <input
        id={id}
        name={name}
        type={type as 'text'}
        inputMode={type === 'number' ? 'numeric' : undefined}
        value={form.values[name] ?? ''}
        onInput={(e) => form.set(name, e.currentTarget.value)}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={described || undefined}
        aria-required={required ? 'true' : undefined}
        autoComplete={autoComplete ?? 'off'}
      />
      {hint ? (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      <FieldError id={id} name={name} error={error} />
    </div>
  );
}

/** A field's API error, under it; the input's aria-describedby points at its id. */
function FieldError({ id, name, error }: { id: string; name: string; error: string | undefined }) {
  return error ? (
    <p class="error" id={`${id}-error`} data-field-error={name}>
      {error}
    </p>
  ) : null;
}

interface SelectProps {
  form: FormState;
  name: string;
  label: string;
  options: { value: string; label: string }[];
}

export function Select({ form, name, label, options }: SelectProps) {
  const id = idOf(name);
  const error = form.errors[name];
  return (
    <div class={`field${error ? ' invalid' : ''}`}>
      <label for={id}>{label}</label>
      <select
        id={id}
        name={name}
        value={form.values[name] ?? ''}
        onChange={(e) => form.set(name, e.currentTarget.value)}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
      >
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      <FieldError id={id} name={name} error={error} />
    </div>
  );
}

export function Checkbox({ form, name, label }: { form: FormState; name: string; label: string }) {
  const id = idOf(name);
  return (
    <div class="field check">
      <input
        id={id}
        type="checkbox"
        checked={form.values[name] === 'true'}
        onChange={(e) => form.set(name, String(e.currentTarget.checked))}
      />
      <label for={id}>{label}</label>
    </div>
  );
}

/** The form's own errors (those about no field it shows), announced and focusable. */
export function FormError({ form }: { form: FormState }) {
  const other = Object.entries(form.errors).filter(([name]) => !(name in form.values));
  if (other.length === 0) return null;
  return (
    <div class="form-error" role="alert" tabIndex={-1} data-form-error>
      {other.map(([name, message]) => (
        <p key={name}>{name ? `${name}: ${message}` : message}</p>
      ))}
    </div>
  );
}

/**
 * A create or edit form. noValidate: the browser checks nothing, the API's problem+json errors come back with a
 * field path and show next to that field. `send` runs through form.submit, which keeps the button busy meanwhile.
 */
export function ApiForm(props: {
  form: FormState;
  send: () => Promise<void>;
  submitLabel: string;
  children: ComponentChildren;
}) {
  const { form } = props;
  return (
    <form
      ref={form.formRef}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void form.submit(props.send);
      }}
      aria-labelledby="page-title"
    >
      <FormError form={form} />
      {props.children}
      <div class="form-actions">
        <button type="submit" class="primary" disabled={form.busy}>
          {form.busy ? 'Saving…' : props.submitLabel}
        </button>
      </div>
    </form>
  );
}

export function FormPage(props: { title: string; children: ComponentChildren; back: string; ready?: boolean }) {
  return (
    <section aria-labelledby="page-title">
      <p>
        <a href={props.back}>← Back</a>
      </p>
      <h1 id="page-title" tabIndex={-1}>
        {props.title}
      </h1>
      {props.ready === false ? <p role="status">Loading…</p> : props.children}
    </section>
  );
}

/** A number field's value for the API: undefined when empty (the API's default), else the number as typed. */
export const num = (text: string | undefined): number | undefined =>
  text === undefined || text.trim() === '' ? undefined : Number(text);
