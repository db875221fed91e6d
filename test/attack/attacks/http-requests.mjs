// Rows against the L7 data path: requests framed, targeted or headed to slip past the proxy.
import { rawExchange, statuses } from '../targets.mjs';

const smuggle = (framing) => {
  const inner = 'GET /smuggled HTTP/1.1\r\nHost: shop\r\n\r\n';
  if (framing === 'content-length') {
    return `POST /a HTTP/1.1\r\nHost: shop\r\nContent-Length: ${inner.length}\r\nConnection: content-length\r\n\r\n${inner}`;
  }
  const chunk = `${inner.length.toString(16)}\r\n${inner}\r\n0\r\n\r\n`;
  return `POST /a HTTP/1.1\r\nHost: shop\r\nTransfer-Encoding: chunked\r\nConnection: transfer-encoding\r\n\r\n${chunk}`;
};

export const smuggling = {
  id: 'smuggling',
  attack: 'request smuggling: Connection names Content-Length / Transfer-Encoding',
  expected: '400, the hidden request never reaches a backend',
  async run(ctx) {
    const { attacker, targets } = ctx;
    const out = [];
    for (const framing of ['content-length', 'transfer-encoding']) {
      const r = await rawExchange(attacker.vip, attacker.http.port, smuggle(framing));
      out.push(`${framing}: ${statuses(r.text).join(',') || (r.closedByPeer ? 'closed' : 'no answer')}`);
    }
    const leaked = targets.echo.seen.filter((s) => s.url === '/smuggled').length;
    const allRefused = out.every((o) => /: 400/.test(o));
    return { ok: leaked === 0 && allRefused, observed: `${out.join('; ')}; hidden requests at backend: ${leaked}` };
  },
};

export const upgrade200 = {
  id: 'upgrade-200',
  attack: 'Upgrade request answered 200 by the backend, then raw bytes (a tunnel past the proxy)',
  expected: 'no tunnel: the raw bytes never reach the backend',
  async run(ctx) {
    const req = 'GET /ws HTTP/1.1\r\nHost: shop\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';
    const r = await rawExchange(ctx.attacker.vip, ctx.attacker.upgrade.port, [
      req,
      'RAW-TUNNEL-BYTES / HTTP/1.1\r\n\r\n',
    ]);
    const tunnelled = ctx.targets.upgrade.raw.some((d) => d.includes('RAW-TUNNEL'));
    return {
      ok: !tunnelled,
      observed: `answers ${statuses(r.text).join(',') || 'none'}; raw bytes at backend: ${tunnelled}`,
    };
  },
};

export const forwardedHeaders = {
  id: 'forwarded-headers',
  attack: 'client-supplied X-Forwarded-For, Forwarded, X-Real-IP, X-Client-IP, True-Client-IP, X-Forwarded-Host',
  expected: 'the backend sees only what the node set',
  async run(ctx) {
    const spoof = '6.6.6.6';
    const req =
      `GET /xff HTTP/1.1\r\nHost: shop\r\nX-Forwarded-For: ${spoof}\r\nForwarded: for=${spoof}\r\nX-Real-IP: ${spoof}\r\n` +
      `X-Client-IP: ${spoof}\r\nTrue-Client-IP: ${spoof}\r\nX-Forwarded-Host: evil.example\r\nConnection: close\r\n\r\n`;
    await rawExchange(ctx.attacker.vip, ctx.attacker.http.port, req);
    const seen = ctx.targets.echo.seen.filter((s) => s.url === '/xff').at(-1);
    if (!seen) return { ok: false, observed: 'the request did not reach the backend' };
    const leaked = Object.entries(seen.headers).filter(
      ([, v]) => String(v).includes(spoof) || String(v).includes('evil.example'),
    );
    return {
      ok: leaked.length === 0,
      observed: leaked.length
        ? `passed through: ${leaked.map(([k]) => k).join(', ')}`
        : `x-forwarded-for: ${seen.headers['x-forwarded-for']}`,
    };
  },
};

export const requestTarget = {
  id: 'request-target',
  attack: 'absolute-form target for another host; duplicate Host',
  expected: '400 for both',
  async run(ctx) {
    const a = await rawExchange(
      ctx.attacker.vip,
      ctx.attacker.http.port,
      'GET http://victim.example/abs HTTP/1.1\r\nHost: shop\r\n\r\n',
    );
    const d = await rawExchange(
      ctx.attacker.vip,
      ctx.attacker.http.port,
      'GET /dup HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n',
    );
    const sa = statuses(a.text)[0];
    const sd = statuses(d.text)[0];
    const verbatim = ctx.targets.echo.seen.some((s) => s.url.startsWith('http://'));
    return {
      ok: sa === 400 && sd === 400 && !verbatim,
      observed: `absolute-form → ${sa ?? 'none'}, duplicate Host → ${sd ?? 'none'}`,
    };
  },
};
