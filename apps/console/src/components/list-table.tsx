import type { ComponentChildren } from 'preact';

/**
 * The console's data table: a header row of column names over the caller's rows. Every column header is
 * `scope="col"` and every row starts with its own `<th scope="row">`, so screen readers name each cell.
 */
export function ListTable(props: { columns: string[]; caption?: string; children: ComponentChildren }) {
  return (
    <table class="list">
      {props.caption ? <caption class="sr-only">{props.caption}</caption> : null}
      <thead>
        <tr>
          {props.columns.map((name) => (
            <th scope="col" key={name}>
              {name}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  );
}
