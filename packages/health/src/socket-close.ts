import type { Socket } from 'node:net';

/**
 * Closes a TCP socket with a reset (SO_LINGER 0), as CLB's checker does: the backend sees RST instead of a
 * FIN handshake, and neither side keeps the connection in TIME_WAIT. That matters at thousands of checks per
 * second, where TIME_WAIT entries on the worker would exhaust ephemeral ports towards a single backend.
 * A socket still connecting (or already closed) is simply destroyed.
 */
export function resetSocket(socket: Socket): void {
  // A late 'error' (ECONNRESET, EPIPE) after the verdict must not become an uncaught exception.
  socket.on('error', ignore);
  if (socket.destroyed) return;
  if (socket.connecting) {
    socket.destroy();
    return;
  }
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}

function ignore(): void {}
