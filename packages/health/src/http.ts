import net from 'node:net';
import tls from 'node:tls';
import type { ProbeOptions, ProbeResult } from './result.js';
import { describeError, runProbe } from './result.js';
import { resetSocket } from './socket-close.js';

/** An HTTP status class a check accepts, CLB's names. */
export type HttpCodeClass = 'http_2xx' | 'http_3xx' | 'http_4xx' | 'http_5xx';

export const HTTP_CODE_CLASSES: readonly HttpCodeClass[] = ['http_2xx', 'http_3xx', 'http_4xx', 'http_5xx'];

/** What an HTTP probe sends and accepts. */
export interface HttpProbeTarget {
  /** Backend address (IPv4, IPv6 or a host name). */
  address: string;
  /** Check port. */
  port: number;
  /** Request method. Default: `'HEAD'`. */
  method?: 'HEAD' | 'GET';
  /** Request target; must start with `/`. Default: `'/'`. */
  path?: string;
  /** Sent as `Host` (and as TLS SNI) when set; when unset no `Host` header is sent, as CLB. */
  domain?: string;
  /** Status classes that count as healthy. Default: `['http_2xx', 'http_3xx']`. */
  httpCodes?: readonly HttpCodeClass[];
  /** Speak TLS to the backend (HTTPS backends); the backend certificate is not verified, as CLB. Default: false. */
  https?: boolean;
}

/** Longest status line we wait for; a backend that sends more without a line break is not speaking HTTP. */
const MAX_STATUS_LINE = 8 * 1024;
const STATUS_LINE = /^HTTP\/\d\.\d (\d{3})(?:[ \t]|$)/;
// Request target and Host go verbatim onto the wire: refuse anything that could split the request.
export const VALID_PATH = /^\/[\x21-\x7e]*$/;
export const VALID_DOMAIN = /^[A-Za-z0-9._~\-[\]:]+$/;

/** The CLB class of a status code (`503` → `'http_5xx'`), or undefined outside 200–599. */
export function httpCodeClass(status: number): HttpCodeClass | undefined {
  if (status >= 200 && status <= 299) return 'http_2xx';
  if (status >= 300 && status <= 399) return 'http_3xx';
  if (status >= 400 && status <= 499) return 'http_4xx';
  if (status >= 500 && status <= 599) return 'http_5xx';
  return undefined;
}

/** The TLS server name for a Host value: the host without port, or undefined for an IP (RFC 6066 allows names only). */
export function sniName(host: string): string | undefined {
  if (net.isIP(host) !== 0) return undefined;
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return name === '' || net.isIP(name) !== 0 ? undefined : name;
}

/**
 * Builds the request. HTTP/1.0, as Tengine's checker: it is the one version in which a request without
 * `Host` is valid, so a backend that does not care about `Host` answers (an HTTP/1.1 request without it
 * gets 400 from nginx or Node). `Connection: close` because every check uses a fresh connection.
 */
export function buildHttpRequest(method: string, path: string, domain: string | undefined): string {
  const host = domain ? `Host: ${domain}\r\n` : '';
  return `${method} ${path} HTTP/1.0\r\n${host}User-Agent: slb-health-check\r\nAccept: */*\r\nConnection: close\r\n\r\n`;
}

/**
 * HTTP(S) check: one fresh connection, one request, and a verdict from the status line alone; the body is
 * never read (the connection is reset as soon as the status line is in). The deadline covers connect, TLS
 * handshake, request and status line.
 */
export function probeHttp(target: HttpProbeTarget, options: ProbeOptions): Promise<ProbeResult> {
  const method = target.method ?? 'HEAD';
  const path = target.path ?? '/';
  const domain = target.domain === '' ? undefined : target.domain;
  const httpCodes = target.httpCodes ?? ['http_2xx', 'http_3xx'];
  return runProbe(options, (control) => {
    if (!VALID_PATH.test(path)) return control.fail('invalid path');
    if (domain !== undefined && !VALID_DOMAIN.test(domain)) return control.fail('invalid domain');

    const raw = net.connect({ host: target.address, port: target.port });
    control.onSettle(() => resetSocket(raw));
    raw.once('error', (err) => control.fail(describeError(err)));

    let stream: net.Socket = raw;
    if (target.https) {
      const servername = sniName(domain ?? target.address);
      const secure = tls.connect({
        socket: raw,
        rejectUnauthorized: false,
        ...(servername !== undefined ? { servername } : {}),
      });
      control.onSettle(() => {
        secure.on('error', () => {});
        secure.destroy();
      });
      secure.once('error', (err) => control.fail(describeError(err)));
      secure.once('secureConnect', () => secure.write(buildHttpRequest(method, path, domain)));
      stream = secure;
    } else {
      raw.once('connect', () => raw.write(buildHttpRequest(method, path, domain)));
    }

    let head = '';
    stream.setEncoding('latin1');
    stream.on('data', (chunk: string) => {
      head += chunk;
      const end = head.indexOf('\n');
      if (end === -1) {
        if (head.length > MAX_STATUS_LINE) control.fail('invalid status line');
        return;
      }
      const match = STATUS_LINE.exec(head.slice(0, end).replace(/\r$/, ''));
      if (!match) return control.fail('invalid status line');
      const status = Number(match[1]);
      const cls = httpCodeClass(status);
      if (cls !== undefined && httpCodes.includes(cls)) return control.succeed();
      control.fail(`status ${status} not in ${httpCodes.join(',')}`);
    });
    stream.once('end', () => control.fail('connection closed before response'));
    stream.once('close', () => control.fail('connection closed before response'));
  });
}
