// The PROXY protocol lives in @slb/node-runtime (encoder and decoder together). This re-export only keeps
// acl.ts's import working until that file imports unmapV4 from the package; then delete this file.
export { unmapV4 } from '@slb/node-runtime';
