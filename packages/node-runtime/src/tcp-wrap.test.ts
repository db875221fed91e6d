import { describe, expect, it } from 'vitest';
import { reusePortByVersion } from './runtime-capabilities.js';
import { loadTcpWrap } from './tcp-wrap.js';

// Runs on every runtime CI tests (Node 20 and 24): a release that changes the internals the nodes' raw TCP
// paths use fails here by name, beside raw-tcp.test.ts failing on behaviour.

type Binding = Record<string, unknown>;
const real = (name: string) => (process as unknown as { binding(n: string): Binding }).binding(name);

/** The real bindings with `path` (e.g. `tcp_wrap.TCP`, `stream_wrap.kReadBytesOrError`) taken out. */
function without(path: string) {
  const [module, member, sub] = path.split('.') as [string, string, string?];
  return (name: string): Binding => {
    const b = real(name);
    if (name !== module) return b;
    if (member === 'constants') return { ...b, constants: { ...(b.constants as Binding), [sub!]: undefined } };
    if (member === 'TCP' && sub !== undefined) {
      const TCP = b.TCP as { prototype: object };
      const Fake = function Fake() {} as unknown as { prototype: Binding };
      Fake.prototype = Object.assign(Object.create(TCP.prototype), { [sub]: undefined });
      return { ...b, TCP: Fake };
    }
    return { ...b, [member]: undefined };
  };
}

describe('the TCP handle bindings on this runtime', () => {
  it('have every member the nodes use', () => {
    const wrap = loadTcpWrap();
    expect(wrap.SOCKET).not.toBe(wrap.SERVER);
    expect(wrap.state).toBeInstanceOf(Int32Array);
  });

  it('offer UV_TCP_REUSEPORT exactly where net offers reusePort', () => {
    expect(loadTcpWrap().UV_TCP_REUSEPORT !== undefined).toBe(reusePortByVersion(process.version));
  });

  it.runIf(reusePortByVersion(process.version))('let two handles share one port with UV_TCP_REUSEPORT', () => {
    const wrap = loadTcpWrap();
    const a = new wrap.TCP(wrap.SERVER);
    const b = new wrap.TCP(wrap.SERVER);
    try {
      expect(a.bind('127.0.0.1', 0, wrap.UV_TCP_REUSEPORT)).toBe(0);
      expect(a.listen(16)).toBe(0);
      const out: { port?: number } = {};
      a.getsockname(out);
      expect(b.bind('127.0.0.1', out.port!, wrap.UV_TCP_REUSEPORT)).toBe(0);
      expect(b.listen(16)).toBe(0);
    } finally {
      a.close();
      b.close();
    }
  });
});

describe('a runtime that changed them stops the node, naming what is gone', () => {
  it.each([
    ['tcp_wrap.TCP', /tcp_wrap has no TCP/],
    ['tcp_wrap.TCPConnectWrap', /tcp_wrap has no TCPConnectWrap/],
    ['tcp_wrap.constants.SERVER', /tcp_wrap.constants has no SERVER/],
    ['stream_wrap.WriteWrap', /stream_wrap has no WriteWrap/],
    ['stream_wrap.streamBaseState', /stream_wrap has no streamBaseState/],
    ['stream_wrap.kLastWriteWasAsync', /stream_wrap has no kLastWriteWasAsync/],
    ['tcp_wrap.TCP.useUserBuffer', /a TCP handle has no useUserBuffer\(\)/],
    ['tcp_wrap.TCP.writeBuffer', /a TCP handle has no writeBuffer\(\)/],
    ['tcp_wrap.TCP.writeLatin1String', /a TCP handle has no writeLatin1String\(\)/],
    ['tcp_wrap.TCP.writev', /a TCP handle has no writev\(\)/],
    ['stream_wrap.kArrayBufferOffset', /stream_wrap has no kArrayBufferOffset/],
  ])('%s', (path, message) => {
    expect(() => loadTcpWrap(without(path))).toThrow(message);
    expect(() => loadTcpWrap(without(path))).toThrow(/changed its internal TCP handles/);
  });
});
