import type { ComponentChildren } from 'preact';

/** A destructive action: it runs only once the user has said yes to `question` (nothing can undo a delete). */
export function ConfirmButton(props: { question: string; onConfirm: () => void; children: ComponentChildren }) {
  return (
    <button
      type="button"
      class="danger"
      onClick={() => {
        if (confirm(props.question)) props.onConfirm();
      }}
    >
      {props.children}
    </button>
  );
}
