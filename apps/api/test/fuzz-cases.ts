import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { ADMIN_TOKEN } from './helpers.js';
import {
  deepJson,
  encodeSegment,
  type Hints,
  headerValue,
  invalidValue,
  type Method,
  nastyString,
  type Operation,
  type Parameter,
  toJsonText,
  validValue,
} from './openapi-fuzz.js';

// The request generators of fuzz.error.test.ts: one arbitrary request per operation, labelled with what its
// answer must be.

const BODY_LIMIT = 1024 * 1024;

/** What the request looks like, and what the document lets us expect of its answer. */
export interface FuzzCase {
  method: Method;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  /** The URL has a malformed percent-encoding: fastify refuses it before routing. */
  badUrl: boolean;
  /**
   * A path parameter past the schema's maxLength; past the router's limit no route matches (404) or the
   * router refuses it before auth runs (400).
   */
  tooLong: boolean;
  authBad: boolean;
  /**
   * The request misses the operation's route: a method not on the path, or an empty or dot segment (which
   * URL normalisation removes). Fastify still parses its body, so 400/413/415 may come before the 404.
   */
  noRoute: boolean;
  /** A path, query or header value the document refuses, or an id that does not exist. */
  outsideBodyBroken: boolean;
  /** The body is not JSON, not the right content type, too large, or breaks the schema. */
  bodyBroken: boolean;
  vague: boolean;
}

interface Part<T> {
  value: T;
  broken: boolean;
  /** Neither surely valid nor surely broken: only the checks that hold for every request apply. */
  vague?: boolean;
}

const take = <T>(value: T, broken = false): Part<T> => ({ value, broken });
/** `arb` in `percent` of the cases, otherwise absent. */
const sometimes = <T>(arb: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: 100 - percent, arbitrary: fc.constant(undefined) }, { weight: percent, arbitrary: arb });

// Query strings are text: the server coerces them (limit=5 is an integer), so the oracle does too.
const queryOracle = new Ajv({ allErrors: false, coerceTypes: 'array', useDefaults: true, strict: false });
addFormats.default(queryOracle);
const queryValidators = new Map<Parameter, ValidateFunction>();
function queryValueValid(p: Parameter, text: string): boolean {
  let validate = queryValidators.get(p);
  if (!validate) {
    validate = queryOracle.compile({ type: 'object', properties: { [p.name]: p.schema } });
    queryValidators.set(p, validate);
  }
  // What arrives is the UTF-8 of the text: a lone surrogate is U+FFFD by then.
  return validate({ [p.name]: Buffer.from(text, 'utf8').toString('utf8') });
}

function headerParam(p: Parameter): fc.Arbitrary<Part<string> | undefined> {
  const max = p.schema.maxLength ?? 200;
  return sometimes(
    fc.oneof(
      {
        weight: 3,
        arbitrary: fc.constantFrom('*', '"r1"', 'W/"r1"', '"r1", "r2"', '"r999"', 'key-1').map((v) => take(v)),
      },
      { weight: 3, arbitrary: headerValue(Math.min(max, 60)).map((v) => take(v)) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(headerValue(20), fc.integer({ min: max + 1, max: max * 20 }))
          .map(([s, n]) => take(`x${s}`.repeat(n).slice(0, n), true)),
      },
    ),
    40,
  );
}

const authHeader = fc.oneof(
  { weight: 40, arbitrary: fc.constant(take(`Bearer ${ADMIN_TOKEN}`)) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        headerValue(80),
        headerValue(80).map((s) => `Bearer ${s}`),
        fc.constantFrom(
          '',
          'Bearer',
          'Bearer ',
          `Basic ${ADMIN_TOKEN}`,
          `Bearer ${ADMIN_TOKEN} x`,
          `Bearer  ${ADMIN_TOKEN}x`,
        ),
      )
      .map((v) => take(v, true)),
  },
);

const contentTypes = fc.constantFrom(
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/xml',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'json',
  'application/json-patch+json',
  '*/*',
);

/** Texts that are not JSON, or JSON of the kinds a hand-written client gets wrong. */
function rawBody(validJson: fc.Arbitrary<string>): fc.Arbitrary<string | Buffer> {
  return fc.oneof(
    nastyString(200),
    fc.tuple(validJson, fc.nat()).map(([s, n]) => s.slice(0, n % Math.max(s.length, 1))),
    validJson.map((s) => `\uFEFF${s}`),
    validJson.map((s) => s.replace(/:(-?\d+)/, ':NaN')),
    validJson.map((s) => s.replace(/:(-?\d+)/, ':1e400')),
    validJson.map((s) => s.replace(/}$/, ',}')),
    validJson.map((s) => s.replace(/^{/, '{"__proto__":{"polluted":1},')),
    validJson.map((s) => s.replace(/^{/, '{"constructor":{"prototype":{"polluted":1}},')),
    fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
    fc.constantFrom('', 'null', '[]', '"x"', '0', 'true', "{'name':'x'}", '{"name":"\\ud800"}', '{"name":"\\u0000"}'),
  );
}

interface BodyPart {
  contentType?: string;
  payload?: string | Buffer;
  broken: boolean;
}

/** What the generators draw from: the fixtures' real ids by path parameter name, and the value hints. */
export interface FuzzFixtures {
  ids: Record<string, string>;
  hints: Hints;
}

export type FuzzCases = ReturnType<typeof fuzzCases>;

/** Generators for `operations`, drawing ids and values from `fixtures` (which must exist by then). */
export function fuzzCases(operations: Operation[], { ids, hints }: FuzzFixtures) {
  const methodsByPath = new Map<string, Set<Method>>();
  for (const op of operations) methodsByPath.set(op.path, (methodsByPath.get(op.path) ?? new Set()).add(op.method));

  const oracle = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false, strict: false });
  addFormats.default(oracle);
  const bodyValidators = new Map<string, ValidateFunction>(
    operations.filter((op) => op.body).map((op) => [op.operationId, oracle.compile(op.body!)]),
  );

  function pathParam(
    param: Parameter,
  ): fc.Arbitrary<Part<string> & { badUrl?: boolean; tooLong?: boolean; reroutes?: boolean }> {
    const real = ids[param.name];
    if (!real) throw new Error(`no fixture id for path parameter ${param.name}: add one to the fuzz test`);
    const others = Object.values(ids).filter((id) => id !== real);
    return fc.oneof(
      { weight: 12, arbitrary: fc.constant(take(real)) },
      { weight: 1, arbitrary: fc.constantFrom(...others).map((id) => take(id, true)) },
      {
        weight: 3,
        arbitrary: fc
          .oneof(nastyString(64), fc.constantFrom('..', '.', `${real}x`, real.toUpperCase(), `${real}/`))
          .map((s) => ({ ...take(encodeSegment(s), true), reroutes: s === '' || s === '.' || s === '..' })),
      },
      {
        weight: 1,
        arbitrary: fc
          .integer({ min: 65, max: 400 })
          .map((n) => ({ ...take(encodeSegment('ñ'.repeat(n)), true), tooLong: true })),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom('%ZZ', '%', '%F', '%FF', '%ED%A0%80', '%C0%AF', '%E0%80%80', `${real}%`)
          .map((s) => ({ ...take(s, true), badUrl: true })),
      },
    );
  }

  function queryString(params: Parameter[]): fc.Arbitrary<Part<string>> {
    const one = (p: Parameter) =>
      sometimes(
        fc
          .oneof(
            { weight: 3, arbitrary: validValue(p.schema, hints, p.name).map((v) => String(v)) },
            {
              weight: 2,
              arbitrary: fc
                .oneof(invalidValue(p.schema, hints, p.name), nastyString())
                .map((v) => (typeof v === 'string' ? v : toJsonText(v))),
            },
          )
          .map((text) => take(text, !queryValueValid(p, text))),
        50,
      );
    // An unknown parameter is refused (the query schemas are strict); stray separators, bad escapes and
    // repeated parameters depend on the query parser, so they promise nothing either way.
    const known = new Set(params.map((p) => p.name));
    const extras = sometimes(
      fc.oneof(
        fc
          .tuple(nastyString(20), nastyString(20))
          .map(([k, v]) => take(`${encodeSegment(k)}=${encodeSegment(v)}`, !known.has(k))),
        fc
          .constantFrom('%ZZ', '%', '&&', '=', '%FF=1', 'limit=1&limit=2', 'cursor=&cursor=', 'limit', '__proto__[x]=1')
          .map((raw) => ({ ...take(raw), vague: true })),
      ),
      10,
    );
    return fc.tuple(fc.tuple(...params.map(one)), extras).map(([values, extra]) => {
      const pairs = params.flatMap((p, i) => {
        const v = values[i];
        return v === undefined ? [] : [`${p.name}=${encodeSegment(v.value)}`];
      });
      if (extra !== undefined) pairs.push(extra.value);
      const broken = values.some((v) => v?.broken) || extra?.broken === true;
      return { ...take(pairs.length > 0 ? `?${pairs.join('&')}` : '', broken), vague: extra?.vague === true };
    });
  }

  function bodyFor(op: Operation): fc.Arbitrary<BodyPart> {
    const asJson = (payload: string | Buffer): BodyPart => {
      const text = typeof payload === 'string' ? payload : payload.toString('utf8');
      if (Buffer.byteLength(text) > BODY_LIMIT) return { contentType: 'application/json', payload, broken: true };
      // An empty body is no body (plugins/json-body.ts): refused only where the route needs one.
      if (text === '') return { contentType: 'application/json', payload, broken: op.body !== undefined };
      let value: unknown;
      try {
        value = JSON.parse(text.replace(/^\uFEFF/, ''));
      } catch {
        return { contentType: 'application/json', payload, broken: true };
      }
      const validate = bodyValidators.get(op.operationId);
      // A route without a body ignores one it is sent.
      const broken = validate ? !validate(value) : false;
      return { contentType: 'application/json', payload, broken };
    };
    if (!op.body) {
      return fc.oneof(
        { weight: 10, arbitrary: fc.constant<BodyPart>({ broken: false }) },
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => asJson(toJsonText(v))) },
        {
          weight: 1,
          arbitrary: rawBody(fc.constant('{"a":1}')).map((p) => {
            const part = asJson(p);
            // Fastify parses the body of a DELETE or POST even where the route has none (so bad JSON is still
            // a 400), and ignores the body of a GET.
            return { ...part, broken: op.method !== 'GET' && part.broken };
          }),
        },
      );
    }
    const valid = validValue(op.body, hints);
    const validJson = valid.map(toJsonText);
    return fc.oneof(
      { weight: 4, arbitrary: validJson.map(asJson) },
      { weight: 10, arbitrary: invalidValue(op.body, hints).map((v) => asJson(toJsonText(v))) },
      { weight: 3, arbitrary: rawBody(validJson).map(asJson) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(contentTypes, validJson)
          .map(([contentType, payload]) => ({ contentType, payload, broken: true })),
      },
      { weight: 1, arbitrary: fc.constant<BodyPart>({ broken: true }) },
      { weight: 1, arbitrary: fc.constant<BodyPart>({ contentType: 'application/json', payload: '', broken: true }) },
      {
        weight: 1,
        arbitrary: fc
          .integer({ min: BODY_LIMIT, max: BODY_LIMIT + 4096 })
          .map((n) => asJson(JSON.stringify({ name: 'x'.repeat(n) }))),
      },
      {
        weight: 1,
        arbitrary: deepJson.map((v) => asJson(toJsonText(v))),
      },
    );
  }

  function caseFor(op: Operation): fc.Arbitrary<FuzzCase> {
    const pathParams = op.parameters.filter((p) => p.in === 'path');
    const queryParams = op.parameters.filter((p) => p.in === 'query');
    const headerParams = op.parameters.filter((p) => p.in === 'header');
    const otherMethods = (['GET', 'POST', 'PATCH', 'DELETE', 'PUT'] as const).filter(
      (m) => !methodsByPath.get(op.path)!.has(m),
    );
    return fc
      .record({
        path: fc.tuple(...pathParams.map(pathParam)),
        query: queryParams.length > 0 ? queryString(queryParams) : fc.constant(take('')),
        headers: fc.tuple(...headerParams.map(headerParam)),
        auth: authHeader,
        body: bodyFor(op),
        wrongMethod: otherMethods.length > 0 ? sometimes(fc.constantFrom(...otherMethods), 3) : fc.constant(undefined),
      })
      .map(({ path, query, headers, auth, body, wrongMethod }) => {
        let i = 0;
        const url = op.path.replace(/\{\w+\}/g, () => path[i++]!.value) + query.value;
        const sent: Record<string, string> = { authorization: auth.value };
        headerParams.forEach((p, k) => {
          const h = headers[k];
          if (h !== undefined) sent[p.name] = h.value;
        });
        if (body.contentType !== undefined) sent['content-type'] = body.contentType;
        return {
          method: wrongMethod ?? op.method,
          url,
          headers: sent,
          ...(body.payload !== undefined ? { payload: body.payload } : {}),
          badUrl: path.some((p) => p.badUrl === true),
          tooLong: path.some((p) => p.tooLong === true),
          authBad: auth.broken,
          noRoute: wrongMethod !== undefined || path.some((p) => p.reroutes === true),
          outsideBodyBroken: path.some((p) => p.broken) || query.broken || headers.some((h) => h?.broken),
          bodyBroken: body.broken,
          vague: query.vague === true,
        };
      });
  }

  /** Each documented path as a pattern: `{param}` is one segment. */
  const pathPatterns = [...methodsByPath].map(
    ([path, methods]) => [new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}$`), methods] as const,
  );

  /**
   * A `..` segment can resolve onto another documented path (/v1/tenants/../quotas is GET /v1/quotas,
   * /v1/load-balancers/lb-…/listeners/../metrics is the LB's metrics).
   */
  function landsOnRoute(c: FuzzCase): boolean {
    const resolved = new URL(c.url, 'http://fuzz').pathname;
    return pathPatterns.some(([pattern, methods]) => pattern.test(resolved) && methods.has(c.method));
  }

  return { caseFor, landsOnRoute };
}
