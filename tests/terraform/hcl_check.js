// hcl_check: parses every .tf file with @cdktf/hcl2json (Terraform's own HCL parser, as WASM)
// and checks every fleetd call the Mastercard/restapi objects make against the OpenAPI spec:
// path and method of create/read/update/destroy, the request fields sent in `data` (nested
// objects too), the response fields read back from `api_response`, id_attribute = "id",
// and that each module declares the Mastercard/restapi provider.
// Usage: node hcl_check.js <openapi.yaml> <dir-or-file>...
'use strict';

const fs = require('fs');
const path = require('path');
const hcl = require('@cdktf/hcl2json');
const YAML = require('yaml');

const errors = [];
const fail = (where, msg) => errors.push(`${where}: ${msg}`);

function walk(p, out) {
  const st = fs.statSync(p);
  if (st.isFile()) {
    if (p.endsWith('.tf')) out.push(p);
    return out;
  }
  for (const name of fs.readdirSync(p).sort()) {
    if (name === '.terraform' || name === 'node_modules') continue;
    walk(path.join(p, name), out);
  }
  return out;
}

// Replaces ${...} interpolations (balanced) and {param} segments by "{}".
function normPath(p) {
  let out = '';
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '$' && p[i + 1] === '{') {
      let depth = 0, j = i + 1;
      for (; j < p.length; j++) {
        if (p[j] === '{') depth++;
        else if (p[j] === '}' && --depth === 0) break;
      }
      out += '{}';
      i = j;
    } else {
      out += p[i];
    }
  }
  out = out.replace(/\{[^}]*\}/g, '{}');
  return out.length > 1 ? out.replace(/\/+$/, '') : out;
}

function resolve(spec, node, seen = new Set()) {
  while (node && node.$ref) {
    if (seen.has(node.$ref)) return {};
    seen.add(node.$ref);
    const parts = node.$ref.replace(/^#\//, '').split('/');
    node = parts.reduce((n, k) => (n ? n[k.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), spec);
  }
  return node || {};
}

// Every property name a schema may carry, with its sub-schemas (allOf/oneOf/anyOf merged).
// Returns null when the schema accepts any property.
function properties(spec, schema, seen = new Set()) {
  schema = resolve(spec, schema);
  if (seen.has(schema)) return new Map();
  seen.add(schema);
  const props = new Map();
  let open = schema.additionalProperties === true ||
    (schema.additionalProperties && typeof schema.additionalProperties === 'object' &&
     !schema.properties);
  for (const [k, v] of Object.entries(schema.properties || {})) props.set(k, v);
  for (const key of ['allOf', 'oneOf', 'anyOf']) {
    for (const sub of schema[key] || []) {
      const p = properties(spec, sub, seen);
      if (p === null) open = true;
      else for (const [k, v] of p) if (!props.has(k)) props.set(k, v);
    }
  }
  if (open && props.size === 0) return null;
  return props;
}

// A tiny reader of HCL object literals inside an expression string: returns a Map of
// key -> nested Map (when the value is itself an object literal) or null.
function objectKeys(s, i) {
  const keys = new Map();
  let depth = 0;
  i++; // past '{'
  while (i < s.length) {
    while (i < s.length && /[\s,]/.test(s[i])) i++;
    if (s[i] === '}') return { keys, end: i + 1 };
    const m = /^("([^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_-]*)\s*[=:]/.exec(s.slice(i));
    if (!m) return { keys: null, end: i };
    const key = m[1].startsWith('"') ? JSON.parse(m[1]) : m[1];
    i += m[0].length;
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] === '{' && !/^\{\s*for\s/.test(s.slice(i))) {
      const sub = objectKeys(s, i);
      keys.set(key, sub.keys);
      i = sub.end;
      continue;
    }
    keys.set(key, null);
    for (depth = 0; i < s.length; i++) { // skip the value expression
      const c = s[i];
      if (c === '"') { for (i++; i < s.length && s[i] !== '"'; i++) if (s[i] === '\\') i++; continue; }
      if ('{[('.includes(c)) depth++;
      else if ('}])'.includes(c)) { if (depth === 0) break; depth--; }
      else if ((c === '\n' || c === ',') && depth === 0) break;
    }
  }
  return { keys, end: i };
}

// Keys of the object passed to jsonencode() in a `data` expression, also through
// `{ for k, v in { ... } : k => v if ... }`.
function dataKeys(expr) {
  const at = expr.indexOf('jsonencode(');
  if (at < 0) return null;
  let i = expr.indexOf('{', at);
  if (i < 0) return null;
  const form = /^\{\s*for\s+[^{]*?\bin\s*\{/.exec(expr.slice(i));
  if (form) i += form[0].length - 1;
  return objectKeys(expr, i).keys;
}

function checkKeys(spec, where, keys, schema, prefix) {
  const props = properties(spec, schema);
  if (props === null) return;
  for (const [k, sub] of keys) {
    if (!props.has(k)) {
      fail(where, `field "${prefix}${k}" is not in the request schema`);
      continue;
    }
    if (sub) checkKeys(spec, where, sub, props.get(k), `${prefix}${k}.`);
  }
}

function operation(spec, index, where, method, p) {
  const item = index.get(normPath(p));
  if (!item) {
    fail(where, `${method} ${p}: path not in the OpenAPI spec`);
    return null;
  }
  const op = item.item[method.toLowerCase()];
  if (!op) fail(where, `${method} ${p}: ${item.raw} has no ${method}`);
  return op || null;
}

function requestSchema(op) {
  const c = op.requestBody && (op.requestBody.content || {})['application/json'];
  return c ? c.schema : undefined;
}

function responseSchema(spec, op) {
  for (const code of ['201', '200']) {
    const r = resolve(spec, (op.responses || {})[code]);
    const c = (r.content || {})['application/json'];
    if (c) return c.schema;
  }
  return undefined;
}

// Strings anywhere in a parsed file (attribute values, locals, outputs).
function strings(node, out = []) {
  if (typeof node === 'string') out.push(node);
  else if (Array.isArray(node)) node.forEach((n) => strings(n, out));
  else if (node && typeof node === 'object') Object.values(node).forEach((n) => strings(n, out));
  return out;
}

function checkObject(spec, index, file, name, obj, created, texts) {
  const where = `${file}: restapi_object.${name}`;
  if (obj.id_attribute !== 'id') fail(where, 'id_attribute must be "id"');
  if (typeof obj.path !== 'string') { fail(where, 'no path'); return; }
  const calls = [
    [obj.create_method || 'POST', obj.create_path || obj.path, 'create'],
    ['GET', obj.read_path || `${obj.path}/{id}`, 'read'],
    [obj.update_method || 'PUT', obj.update_path || `${obj.path}/{id}`, 'update'],
    [obj.destroy_method || 'DELETE', obj.destroy_path || `${obj.path}/{id}`, 'destroy'],
  ];
  let createOp = null;
  for (const [method, p, what] of calls) {
    const op = operation(spec, index, where, method, p);
    if (what === 'create') createOp = op;
  }
  if (!createOp) return;
  const keys = typeof obj.data === 'string' ? dataKeys(obj.data) : null;
  if (!keys) fail(where, 'data must be jsonencode({...}) of an object literal');
  else if (!requestSchema(createOp)) fail(where, `create has no JSON request body in the spec`);
  else checkKeys(spec, where, keys, requestSchema(createOp), '');
  for (const list of ['force_new', 'ignore_changes_to']) {
    for (const f of obj[list] || []) {
      if (keys && !keys.has(f)) fail(where, `${list} names "${f}", which data does not send`);
    }
  }
  // Response fields read back: jsondecode(restapi_object.NAME.api_response).FIELD, either
  // directly or through a local that holds the decoded object.
  const props = properties(spec, responseSchema(spec, createOp));
  const direct = new RegExp(`jsondecode\\(restapi_object\\.${name}\\.api_response\\)((?:\\.[A-Za-z_][A-Za-z0-9_]*)+)`, 'g');
  const fields = [];
  for (const t of texts) {
    for (const m of t.matchAll(direct)) fields.push(m[1].slice(1).split('.'));
    for (const local of created) {
      const re = new RegExp(`local\\.${local}((?:\\.[A-Za-z_][A-Za-z0-9_]*)+)`, 'g');
      for (const m of t.matchAll(re)) fields.push(m[1].slice(1).split('.'));
    }
  }
  for (const chain of fields) {
    let cur = props;
    for (const f of chain.slice(0, 2)) { // the object's own fields, one level in
      if (cur === null) break;
      if (!cur.has(f)) { fail(where, `response field "${chain.join('.')}" is not in the response schema`); break; }
      cur = properties(spec, cur.get(f));
    }
  }
}

async function main() {
  const [specPath, ...roots] = process.argv.slice(2);
  if (!specPath || roots.length === 0) {
    console.error('usage: node hcl_check.js <openapi.yaml> <dir-or-file>...');
    process.exit(2);
  }
  const spec = YAML.parse(fs.readFileSync(specPath, 'utf8'));
  const index = new Map();
  for (const [raw, item] of Object.entries(spec.paths || {})) index.set(normPath(raw), { raw, item });
  const files = roots.flatMap((r) => walk(r, []));
  const parsed = new Map();
  for (const f of files) {
    try {
      parsed.set(f, await hcl.parse(path.basename(f), fs.readFileSync(f, 'utf8')));
    } catch (e) {
      fail(f, `HCL parse error: ${String(e.message || e).trim()}`);
    }
  }
  // Per directory (= module): its restapi objects, locals, strings and provider declaration.
  const dirs = new Map();
  for (const [f, j] of parsed) {
    const d = dirs.get(path.dirname(f)) || { objects: [], locals: {}, texts: [], restapi: false };
    for (const [name, blocks] of Object.entries((j.resource || {}).restapi_object || {})) {
      for (const b of blocks) d.objects.push({ file: f, name, obj: b });
    }
    for (const l of j.locals || []) Object.assign(d.locals, l);
    for (const t of j.terraform || []) {
      for (const rp of t.required_providers || []) {
        const r = rp.restapi;
        if (r && String(r.source).toLowerCase() === 'mastercard/restapi') d.restapi = true;
      }
    }
    d.texts.push(...strings(j));
    dirs.set(path.dirname(f), d);
  }
  let count = 0;
  for (const [dir, d] of dirs) {
    if (d.objects.length && !d.restapi) fail(dir, 'required_providers does not declare Mastercard/restapi');
    for (const { file, name, obj } of d.objects) {
      const created = Object.entries(d.locals)
        .filter(([, v]) => typeof v === 'string' && v.includes(`jsondecode(restapi_object.${name}.api_response)`))
        .map(([k]) => k);
      checkObject(spec, index, file, name, obj, created, d.texts);
      count++;
    }
  }
  if (errors.length) {
    for (const e of errors) console.error(`FAIL ${e}`);
    console.error(`hcl_check: ${errors.length} problem(s) in ${files.length} files`);
    process.exit(1);
  }
  console.log(`hcl_check: ${files.length} .tf files parsed, ${count} restapi objects match ${specPath}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
