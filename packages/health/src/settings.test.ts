import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HttpCodeClass } from './http.js';
import type { HealthCheckConfig, HealthCheckContext } from './settings.js';
import { probeKey, resolveHealthCheck } from './settings.js';

const tcp: HealthCheckContext = { listenerProtocol: 'tcp', serverPort: 8080 };
const http: HealthCheckContext = { listenerProtocol: 'http', serverPort: 8080 };
const udp: HealthCheckContext = { listenerProtocol: 'udp', serverPort: 5353 };

describe('resolveHealthCheck', () => {
  it('applies the CLB defaults from API.md', () => {
    expect(resolveHealthCheck(undefined, http)).toEqual({
      enabled: true,
      type: 'http',
      port: 8080,
      timeout: 5,
      interval: 2,
      healthyThreshold: 3,
      unhealthyThreshold: 3,
      method: 'HEAD',
      path: '/',
      domain: null,
      httpCodes: ['http_2xx', 'http_3xx'],
      https: false,
      udpRequest: '',
      udpExpect: '',
    });
  });

  it('defaults the type from the listener protocol', () => {
    expect(resolveHealthCheck({}, tcp).type).toBe('tcp');
    expect(resolveHealthCheck({}, http).type).toBe('http');
    expect(resolveHealthCheck({}, { listenerProtocol: 'https', serverPort: 443 }).type).toBe('http');
    expect(resolveHealthCheck({}, udp).type).toBe('udp');
    expect(resolveHealthCheck({ type: 'http' }, tcp).type).toBe('http');
  });

  it('uses HTTPS only for HTTP checks of TLS backends', () => {
    const tls = { listenerProtocol: 'https', serverPort: 443, backendTls: true } as const;
    expect(resolveHealthCheck({}, tls).https).toBe(true);
    expect(resolveHealthCheck({ type: 'tcp' }, tls).https).toBe(false);
  });

  it('keeps explicit values and normalises code order and an empty domain', () => {
    const settings = resolveHealthCheck(
      {
        port: 81,
        timeout: 300,
        interval: 50,
        healthyThreshold: 10,
        unhealthyThreshold: 2,
        method: 'GET',
        path: '/hc',
        domain: '',
        httpCodes: ['http_5xx', 'http_2xx', 'http_2xx'],
      },
      http,
    );
    expect(settings).toMatchObject({
      port: 81,
      timeout: 300,
      interval: 50,
      healthyThreshold: 10,
      unhealthyThreshold: 2,
      method: 'GET',
      path: '/hc',
      domain: null,
      httpCodes: ['http_2xx', 'http_5xx'],
    });
  });

  it.each<[string, HealthCheckConfig, HealthCheckContext]>([
    ['timeout 0', { timeout: 0 }, tcp],
    ['timeout 301', { timeout: 301 }, tcp],
    ['timeout 1.5', { timeout: 1.5 }, tcp],
    ['interval 0', { interval: 0 }, tcp],
    ['interval 51', { interval: 51 }, tcp],
    ['healthyThreshold 1', { healthyThreshold: 1 }, tcp],
    ['healthyThreshold 11', { healthyThreshold: 11 }, tcp],
    ['unhealthyThreshold 1', { unhealthyThreshold: 1 }, tcp],
    ['unhealthyThreshold 11', { unhealthyThreshold: 11 }, tcp],
    ['port 0', { port: 0 }, tcp],
    ['port 65536', { port: 65536 }, tcp],
    ['a path without a slash', { path: 'health' }, http],
    ['a path with a space', { path: '/a b' }, http],
    ['a domain with CRLF', { domain: 'a.test\r\nX: y' }, http],
    ['no code class', { httpCodes: [] }, http],
    ['an unknown code class', { httpCodes: ['http_1xx' as HttpCodeClass] }, http],
    ['a method other than HEAD/GET', { method: 'POST' as 'GET' }, http],
    ['a UDP check on a TCP listener', { type: 'udp' }, tcp],
    ['a TCP check on a UDP listener', { type: 'tcp' }, udp],
  ])('rejects %s', (_, config, context) => {
    expect(() => resolveHealthCheck(config, context)).toThrow(RangeError);
  });

  it('accepts the range bounds', () => {
    for (const value of [1, 300]) expect(resolveHealthCheck({ timeout: value }, tcp).timeout).toBe(value);
    for (const value of [1, 50]) expect(resolveHealthCheck({ interval: value }, tcp).interval).toBe(value);
    for (const value of [2, 10]) {
      expect(resolveHealthCheck({ healthyThreshold: value, unhealthyThreshold: value }, tcp)).toMatchObject({
        healthyThreshold: value,
        unhealthyThreshold: value,
      });
    }
  });
});

describe('probeKey', () => {
  const base = resolveHealthCheck({ type: 'http', path: '/hc', domain: 'a.test' }, http);

  it('is the same for identical settings on the same address:port, and readable', () => {
    const again = resolveHealthCheck({ domain: 'a.test', path: '/hc', type: 'http' }, http);
    expect(probeKey('10.0.0.5', again)).toBe(probeKey('10.0.0.5', base));
    expect(probeKey('10.0.0.5', base)).toMatch(/^http:10\.0\.0\.5:8080:[A-Za-z0-9_-]{22}$/);
    expect(probeKey('::1', resolveHealthCheck({}, tcp))).toMatch(/^tcp:\[::1\]:8080:/);
  });

  it('ignores thresholds, enabled, code order and settings the type does not use', () => {
    const key = probeKey('10.0.0.5', base);
    expect(probeKey('10.0.0.5', { ...base, healthyThreshold: 9, unhealthyThreshold: 7, enabled: false })).toBe(key);
    expect(probeKey('10.0.0.5', { ...base, udpRequest: 'x' })).toBe(key);
    const tcpKey = probeKey('10.0.0.5', resolveHealthCheck({}, tcp));
    expect(probeKey('10.0.0.5', resolveHealthCheck({ path: '/other', domain: 'b.test' }, tcp))).toBe(tcpKey);
    const codes = (httpCodes: HttpCodeClass[]) => probeKey('h', resolveHealthCheck({ httpCodes }, http));
    expect(codes(['http_3xx', 'http_2xx'])).toBe(codes(['http_2xx', 'http_3xx']));
  });

  it('differs whenever the probe or its schedule differs', () => {
    const key = probeKey('10.0.0.5', base);
    const variants = [
      probeKey('10.0.0.6', base),
      probeKey('10.0.0.5', { ...base, port: 8081 }),
      probeKey('10.0.0.5', { ...base, type: 'tcp' }),
      probeKey('10.0.0.5', { ...base, timeout: 6 }),
      probeKey('10.0.0.5', { ...base, interval: 3 }),
      probeKey('10.0.0.5', { ...base, method: 'GET' }),
      probeKey('10.0.0.5', { ...base, path: '/HC' }),
      probeKey('10.0.0.5', { ...base, domain: null }),
      probeKey('10.0.0.5', { ...base, domain: 'b.test' }),
      probeKey('10.0.0.5', { ...base, httpCodes: ['http_2xx'] }),
      probeKey('10.0.0.5', { ...base, https: true }),
    ];
    expect(new Set([key, ...variants]).size).toBe(variants.length + 1);
    const u = resolveHealthCheck({ udpRequest: 'ping', udpExpect: 'pong' }, udp);
    expect(probeKey('h', u)).not.toBe(probeKey('h', { ...u, udpExpect: 'PONG' }));
    expect(probeKey('h', u)).not.toBe(probeKey('h', { ...u, udpRequest: 'PING' }));
  });

  it('does not depend on the order of fields in the config (property)', () => {
    const configArb = fc.record(
      {
        path: fc.constantFrom('/', '/a', '/b?c=d'),
        domain: fc.constantFrom('a.test', 'b.test'),
        timeout: fc.integer({ min: 1, max: 300 }),
        interval: fc.integer({ min: 1, max: 50 }),
        httpCodes: fc.subarray(['http_2xx', 'http_3xx', 'http_4xx', 'http_5xx'] as HttpCodeClass[], { minLength: 1 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(configArb, (config) => {
        const reversed = Object.fromEntries(Object.entries(config).reverse()) as HealthCheckConfig;
        const shuffledCodes = config.httpCodes ? { ...reversed, httpCodes: [...config.httpCodes].reverse() } : reversed;
        expect(probeKey('h', resolveHealthCheck(shuffledCodes, http))).toBe(
          probeKey('h', resolveHealthCheck(config, http)),
        );
      }),
    );
  });
});
