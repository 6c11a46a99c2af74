// validate: checks HTTP responses recorded by the integration harness against api/openapi.yaml.
// Input: JSON lines {method, path, status, content_type, body} (tests/integration/harness.c
// writes them).  Each response is matched to its operation (path template + method), then to
// the response of its status (exact, 4XX-style range, or default); the content type must be
// one the spec lists there, and a JSON body is validated with ajv (JSON Schema 2020-12, as
// OpenAPI 3.1 uses) against that response's schema, $refs resolved.  Non-JSON bodies
// (metrics, this document) are checked for route, status and content type only.  Responses
// to paths no route knows are accepted only as the router's own problem+json 400/404, and to
// a known path with an unknown method only as a problem+json 405.
// Usage: node validate.js <openapi.yaml> <responses.jsonl>
'use strict';

const fs = require('fs');
const YAML = require('yaml');
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

const esc = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function loadSpec(file) {
  const spec = YAML.parse(fs.readFileSync(file, 'utf8'));
  const ajv = new Ajv2020({ strict: false, allErrors: true, verbose: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema(spec, 'openapi');
  // Where each schema object sits in the document, to re-check one oneOf branch at a time.
  const where = new Map();
  (function walk(node, ptr) {
    if (!node || typeof node !== 'object' || where.has(node)) return;
    where.set(node, ptr);
    for (const [k, v] of Object.entries(node)) walk(v, `${ptr}/${esc(String(k))}`);
  })(spec, '');
  const routes = [];
  for (const [template, item] of Object.entries(spec.paths || {})) {
    const parts = template.split('/');
    const re = new RegExp('^' + parts.map((p) => (/^\{[^}]+\}$/.test(p) ? '[^/]+' :
      p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/') + '$');
    routes.push({ template, item, re, literals: parts.filter((p) => p && !p.startsWith('{')).length });
  }
  return { spec, ajv, routes, where, validators: new Map() };
}

// Follows $ref chains inside the spec; returns {node, pointer} of the target.
function deref(spec, node, pointer) {
  const seen = new Set();
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    if (!node.$ref.startsWith('#/') || seen.has(node.$ref)) {
      throw new Error(`cannot resolve ${node.$ref}`);
    }
    seen.add(node.$ref);
    pointer = node.$ref.slice(1);
    node = pointer.split('/').slice(1).reduce((n, k) =>
      (n == null ? undefined : n[k.replace(/~1/g, '/').replace(/~0/g, '~')]), spec);
  }
  return { node, pointer };
}

function validator(ctx, pointer) {
  let v = ctx.validators.get(pointer);
  if (!v) {
    v = ctx.ajv.compile({ $ref: `openapi#${pointer}` });
    ctx.validators.set(pointer, v);
  }
  return v;
}

const problemPointer = '/components/schemas/Problem';

function baseType(ct) {
  return (ct || '').split(';')[0].trim().toLowerCase();
}

function isJson(mt) {
  return mt === 'application/json' || /^application\/[a-z0-9.+-]*\+json$/.test(mt);
}

// The route with the most literal segments wins, as in the router's table order.
function findPath(ctx, path) {
  let best = null;
  for (const r of ctx.routes) {
    if (r.re.test(path) && (!best || r.literals > best.literals)) best = r;
  }
  return best;
}

function describe(e) {
  if (e.keyword === 'additionalProperties') return `has "${e.params.additionalProperty}", which the schema does not list`;
  if (e.keyword === 'required') return `lacks required field "${e.params.missingProperty}"`;
  if (e.keyword === 'enum') return `must be one of ${JSON.stringify(e.params.allowedValues)}`;
  return e.message;
}

// ajv reports every alternative of a failed oneOf/anyOf; keep only the closest one (the
// branch with the fewest errors), re-checked on its own, so the field at fault is named.
function closest(ctx, e) {
  const base = Array.isArray(e.schema) ? ctx.where.get(e.schema) : undefined;
  if (base === undefined) return null;
  let best = null;
  e.schema.forEach((branch, i) => {
    const v = validator(ctx, `${base}/${i}`);
    if (v(e.data)) return;
    const errs = v.errors.map((x) => ({ ...x, instancePath: e.instancePath + x.instancePath }));
    if (!best || errs.length < best.errs.length) {
      best = { errs, name: branch.title || (branch.$ref || '').split('/').pop() || `#${i}` };
    }
  });
  return best;
}

function formatErrors(ctx, errors) {
  let list = errors || [];
  const alt = list.filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf')
    .sort((a, b) => a.instancePath.length - b.instancePath.length)[0];
  let head = [];
  if (alt) {
    const best = closest(ctx, alt);
    if (best) {
      const inside = (e) => e.instancePath === alt.instancePath ||
        e.instancePath.startsWith(`${alt.instancePath}/`);
      head = [`${alt.instancePath || '(body)'} matches no alternative; closest is ${best.name}:`];
      list = list.filter((e) => !inside(e)).concat(best.errs);
    }
  }
  const out = [];
  const seen = new Set();
  for (const e of list) {
    const line = `${e.instancePath === '' ? '(body)' : e.instancePath} ${describe(e)}`;
    if (!seen.has(line)) {
      seen.add(line);
      out.push(line);
    }
  }
  return head.concat(out.slice(0, 8));
}

function checkBody(ctx, rec, pointer, label, problems) {
  if (rec.body_invalid_utf8) {
    problems.push(`${label}: body is not valid UTF-8`);
    return;
  }
  let body;
  try {
    body = JSON.parse(rec.body);
  } catch (e) {
    problems.push(`${label}: body is not JSON (${e.message})`);
    return;
  }
  const v = validator(ctx, pointer);
  if (!v(body)) {
    for (const line of formatErrors(ctx, v.errors)) problems.push(`${label}: ${line}`);
  }
}

// Returns a list of problems for one recorded response (empty when valid) and whether its
// body was schema-checked.
function checkOne(ctx, rec) {
  const problems = [];
  const method = String(rec.method || '').toUpperCase();
  const status = Number(rec.status);
  const path = String(rec.path || '').split('?')[0].replace(/(.)\/+$/, '$1');
  const mt = baseType(rec.content_type);
  const hasBody = typeof rec.body === 'string' && rec.body.length > 0;
  let label = `${method} ${rec.path} -> ${status}`;
  const route = findPath(ctx, path);
  const opMethod = method === 'HEAD' ? 'get' : method.toLowerCase();
  const op = route && METHODS.includes(opMethod) ? route.item[opMethod] : undefined;

  if (!op) {
    // The router answers these before any operation runs.
    const ok = route ? status === 405 : status === 400 || status === 404;
    if (!ok || mt !== 'application/problem+json') {
      problems.push(`${label}: matches no operation of the spec` +
        (route ? ` (${route.template} has no ${method})` : ' (no path template matches)'));
      return { problems, checked: false };
    }
    checkBody(ctx, rec, problemPointer, `${label} [router problem]`, problems);
    return { problems, checked: true };
  }
  label = `${method} ${route.template} (${op.operationId || '?'}) -> ${status} [${rec.path}]`;
  const responses = op.responses || {};
  const code = [String(status), `${String(status)[0]}XX`, 'default'].find((c) => responses[c]);
  if (!code) {
    problems.push(`${label}: status ${status} is not documented and there is no default`);
    return { problems, checked: false };
  }
  const base = `/paths/${esc(route.template)}/${opMethod}/responses/${esc(code)}`;
  const { node: resp, pointer: respPointer } = deref(ctx.spec, responses[code], base);
  const content = (resp && resp.content) || {};
  if (method === 'HEAD' || !hasBody) {
    if (!hasBody && method !== 'HEAD' && Object.keys(content).length > 0 && status !== 204) {
      problems.push(`${label}: empty body, but the spec documents ${Object.keys(content).join(', ')}`);
    }
    return { problems, checked: false };
  }
  if (Object.keys(content).length === 0) {
    problems.push(`${label}: has a body (${mt || 'no content type'}) but the spec documents none`);
    return { problems, checked: false };
  }
  const mtKey = Object.keys(content).find((k) => baseType(k) === mt);
  if (!mtKey) {
    problems.push(`${label}: content type ${mt || '(none)'} is not one of ${Object.keys(content).join(', ')}`);
    return { problems, checked: false };
  }
  if (!isJson(mt)) return { problems, checked: false };
  if (!content[mtKey].schema) return { problems, checked: false };
  checkBody(ctx, rec, `${respPointer}/content/${esc(mtKey)}/schema`, label, problems);
  return { problems, checked: true };
}

function main() {
  const [specPath, logPath] = process.argv.slice(2);
  if (!specPath || !logPath) {
    console.error('usage: node validate.js <openapi.yaml> <responses.jsonl>');
    process.exit(2);
  }
  const ctx = loadSpec(specPath);
  let text;
  try {
    text = fs.readFileSync(logPath, 'utf8');
  } catch (e) {
    console.error(`openapi validate: cannot read ${logPath}: ${e.message}`);
    process.exit(1);
  }
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const ops = new Set();
  let failed = 0, checked = 0;
  lines.forEach((line, i) => {
    let rec;
    try {
      rec = JSON.parse(line);
    } catch (e) {
      console.error(`FAIL ${logPath}:${i + 1}: not a JSON line (${e.message})`);
      failed++;
      return;
    }
    let res;
    try {
      res = checkOne(ctx, rec);
    } catch (e) {
      res = { problems: [`${rec.method} ${rec.path} -> ${rec.status}: ${e.message}`], checked: false };
    }
    if (res.checked) checked++;
    const route = findPath(ctx, String(rec.path || '').split('?')[0].replace(/(.)\/+$/, '$1'));
    const m = String(rec.method || '').toLowerCase() === 'head' ? 'get' : String(rec.method || '').toLowerCase();
    if (route && METHODS.includes(m) && route.item[m]) ops.add(`${m.toUpperCase()} ${route.template}`);
    if (res.problems.length) {
      failed++;
      for (const p of res.problems) console.error(`FAIL ${p}`);
    }
  });
  const summary = `openapi validate: ${lines.length} responses, ${checked} bodies schema-checked, ` +
    `${ops.size} operations exercised, ${failed} failing`;
  if (failed) {
    console.error(summary);
    process.exit(1);
  }
  console.log(summary);
}

main();
