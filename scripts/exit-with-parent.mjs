// Preloaded into every child of the local cloud (`node --import ./scripts/exit-with-parent.mjs app.js`): Node
// has no PR_SET_PDEATHSIG, so the child polls its parent pid, and when the supervisor is gone (killed with
// SIGKILL, crashed) and the child was re-parented, it stops itself: SIGTERM for its own graceful shutdown,
// then a hard exit if that takes too long. Nothing is left holding the local cloud's ports.
const POLL_MS = 200;
/** How long the graceful shutdown may take once the parent is gone. */
const GRACE_MS = 1500;

const parent = process.ppid;
const poll = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(poll);
  process.stderr.write(
    `${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, parent, msg: 'supervisor gone: stopping' })}\n`,
  );
  setTimeout(() => process.exit(1), GRACE_MS).unref();
  process.kill(process.pid, 'SIGTERM');
}, POLL_MS);
poll.unref();
