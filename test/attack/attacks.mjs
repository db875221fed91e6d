// The reproductions of the data-plane isolation issue, one per row: what an attacker holding one ordinary
// member token tries, what the cloud must do instead, and what it did. Each `run` returns
// { ok, observed }; `ok` is decided from what reached the targets or what the cloud answered, never assumed.
// They live by target: attacks/http-requests.mjs, attacks/control-plane.mjs, attacks/l4-nodes.mjs,
// attacks/certificates-dns.mjs. This list is the order the runner plays them in.
import { dnsAmplification, tlsKeySize } from './attacks/certificates-dns.mjs';
import {
  backendCloud,
  configFreeze,
  lbQuota,
  memberAdmin,
  proxyViaListener,
  slowHeaders,
  vipClaim,
} from './attacks/control-plane.mjs';
import { forwardedHeaders, requestTarget, smuggling, upgrade200 } from './attacks/http-requests.mjs';
import { proxyDirect, tcpIdleFlood, udpUnanswered, vipCross, vipSelfLoop } from './attacks/l4-nodes.mjs';

export { slowHeaders };

export const ATTACKS = [
  smuggling,
  backendCloud,
  proxyDirect,
  proxyViaListener,
  configFreeze,
  tlsKeySize,
  upgrade200,
  forwardedHeaders,
  requestTarget,
  dnsAmplification,
  tcpIdleFlood,
  udpUnanswered,
  vipClaim,
  vipCross,
  vipSelfLoop,
  memberAdmin,
  lbQuota,
];
